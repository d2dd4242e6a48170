import { isJsonObject } from '../util/json';
import { formatPointer } from '../patch/pointer';
import type { CompiledPatchOperation, CompiledRule } from '../rule/compile';
import { pinnedValues } from '../rule/pins';
import { ResourceCatalog } from '../scope/catalog';
import { PATCHED_BY_ANNOTATION } from '../engine/record';

/*
 * What GitOps tools must leave alone because modrule patches it: per group and kind, the paths the rules in force
 * write. Argo CD takes exact JSON pointers and jq path expressions (list elements as `[]`, an appended element by
 * its name); Flux takes JSON pointers only, so a write into list elements is ignored as the whole list. Webhook
 * patches are recorded under the writer's field manager (Argo CD's, Flux's own), so ignoring by manager cannot tell
 * them apart: it has to be by path, and only the rules know the paths. Pure: no cluster.
 */

/** The objects an entry is about: `*` for any group or kind. */
export interface IgnoreTarget {
  readonly group: string;
  readonly kind: string;
}

/** The paths to ignore on one group and kind, in each tool's terms, and the rules that write them. */
export interface IgnoreEntry {
  readonly target: IgnoreTarget;
  /** Exact paths (Argo CD jsonPointers). */
  readonly jsonPointers: readonly string[];
  /** Paths into list elements (Argo CD jqPathExpressions). */
  readonly jqPathExpressions: readonly string[];
  /** Every path as a JSON pointer, a write into list elements as the list (Flux paths). */
  readonly pointers: readonly string[];
  readonly rules: readonly string[];
}

/** What to export. */
export interface IgnoreOptions {
  /** Maps kinds without an apiVersion criterion to their group(s). */
  readonly catalog: ResourceCatalog;
  /** The operator records the rules that patched an object (--record-patched-by): that annotation too. */
  readonly recordPatchedBy?: boolean;
}

const LIST_POSITION = /^(?:0|-?[1-9]\d*|-)$/;
const APPEND = /^(?:-|-1)$/;

/** One write as each tool can say it. */
interface Said {
  pointer?: string;
  jq?: string;
  flux: string;
}

/** A jq path for tokens (list positions as `[]`): `.spec.template.spec.containers[].resources`. */
function jqPath(tokens: ReadonlyArray<string | null>): string {
  return tokens
    .map((t) => (t === null ? '[]' : /^[A-Za-z_][A-Za-z0-9_]*$/.test(t) ? `.${t}` : `[${JSON.stringify(t)}]`))
    .join('')
    .replace(/^\[\]/, '.[]');
}

/** How one operation's path is said: exact, by jq, and for Flux. */
function said(op: CompiledPatchOperation): Said | undefined {
  // null: a list position (an index, an append, a #N placeholder).
  const tokens = op.tokens.map((t) => (typeof t !== 'string' || LIST_POSITION.test(t) ? null : t));
  if (tokens[0] === 'syntheticRefs') return undefined; // never on the stored object
  const firstList = tokens.indexOf(null);
  if (firstList < 0) {
    const pointer = formatPointer(tokens as string[]);
    return { pointer, flux: pointer };
  }
  const flux = formatPointer(tokens.slice(0, firstList) as string[]);
  const last = op.tokens[op.tokens.length - 1];
  const appended = typeof last === 'string' && APPEND.test(last) && op.op === 'add';
  const value = op.value.kind === 'constant' ? op.value.value : undefined;
  // An element the rule appends, known by its name: only that element.
  if (appended && isJsonObject(value) && typeof value.name === 'string' && firstList === tokens.length - 1)
    return { jq: `${jqPath(tokens.slice(0, -1))}[] | select(.name == ${JSON.stringify(value.name)})`, flux };
  return { jq: jqPath(tokens), flux };
}

/** The groups of a kind: an apiVersion criterion's, else the catalog's ('*' when unknown). */
function groupsOf(rule: CompiledRule, kind: string, catalog: ResourceCatalog): string[] {
  const versions = pinnedValues(rule.match, 'apiVersion');
  if (versions) return [...new Set([...versions].map((v) => (v.includes('/') ? v.split('/')[0] : '')))];
  if (kind === '*') return ['*'];
  const groups = [...new Set(catalog.resourcesOf(kind).map((r) => r.group))];
  return groups.length > 0 ? groups : ['*'];
}

/** Drops paths that lie under another path of the list (the shorter one covers them). */
function covering(paths: Iterable<string>): string[] {
  const sorted = [...new Set(paths)].sort();
  return sorted.filter((p) => !sorted.some((q) => q !== p && p.startsWith(`${q}/`)));
}

/** The paths the enforced Patch rules write, per group and kind, with notes on what could not be said exactly. */
export function ignoredPaths(
  rules: readonly CompiledRule[],
  options: IgnoreOptions,
): { entries: IgnoreEntry[]; notes: string[] } {
  const notes: string[] = [];
  const byTarget = new Map<string, { target: IgnoreTarget; said: Said[]; rules: Set<string> }>();
  for (const rule of rules) {
    if (rule.type !== 'Patch') continue;
    if (rule.enforcement !== 'Enforce') {
      notes.push(
        `${rule.key} is in ${rule.enforcement}: it patches nothing yet (export again once it is enforced)`,
      );
      continue;
    }
    const ops = rule.patch.map(said).filter((s): s is Said => s !== undefined);
    if (options.recordPatchedBy) {
      const pointer = formatPointer(['metadata', 'annotations', PATCHED_BY_ANNOTATION]);
      ops.push({ pointer, flux: pointer });
    }
    for (const kind of [...(pinnedValues(rule.match, 'kind') ?? ['*'])].sort())
      for (const group of groupsOf(rule, kind, options.catalog)) {
        const key = `${group}/${kind}`;
        let entry = byTarget.get(key);
        if (!entry) byTarget.set(key, (entry = { target: { group, kind }, said: [], rules: new Set() }));
        entry.said.push(...ops);
        entry.rules.add(rule.key);
      }
  }
  const entries = [...byTarget.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, e]): IgnoreEntry => {
      const pointers = covering(e.said.flatMap((s) => (s.pointer ? [s.pointer] : [])));
      return {
        target: e.target,
        jsonPointers: pointers,
        jqPathExpressions: [...new Set(e.said.flatMap((s) => (s.jq ? [s.jq] : [])))].sort(),
        pointers: covering(e.said.map((s) => s.flux)),
        rules: [...e.rules].sort(),
      };
    });
  return { entries, notes };
}
