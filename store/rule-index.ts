import { CompiledJsonPath } from '../jsonpath';
import { CompiledMatchItem, CompiledRule } from '../rule/compile';
import { SelectCache } from '../jsonpath/select-cache';
import { AdmissionOperation } from '../rule/types';

/** Rules indexed on one fixed path: by each exact value their criterion accepts. */
interface IndexedPath {
  readonly select: CompiledJsonPath;
  readonly byValue: Map<string, number[]>;
  /** Every rule indexed on this path, for values the index cannot look up (not a plain string). */
  readonly all: number[];
}

// Paths that say most about which rules can match, in order of preference; any other fixed path comes next,
// `$.kind` and `$.apiVersion` (few distinct values) last.
const PREFERRED = /^\$\.metadata\.(?:labels|annotations|name|namespace)\b/;
const COARSE = /^\$\.(?:kind|apiVersion)$/;

// Lists from rulesFor() are memoized per snapshot and namespace, so their index is too.
const indexes = new WeakMap<readonly CompiledRule[], RuleIndex>();

/**
 * The rules that apply in one namespace, indexed as OPA indexes rules: each rule by one criterion that compares a
 * fixed path (`$.kind`, `$.metadata.labels.app`...) with exact values. A request reads each indexed path once and
 * visits only rules whose value matches, plus rules without such a criterion. Candidates are then matched in full,
 * so the index only skips rules that cannot match; the order (tier, namespace, name) is kept.
 */
export class RuleIndex {
  private readonly always: number[] = [];
  private readonly paths: IndexedPath[] = [];
  /** Operations any of the rules handles: a request for another one has nothing to evaluate. */
  readonly operations = new Set<AdmissionOperation>();
  /** Operations some Reject rule handles: only those requests reserve budget for the Reject phase. */
  readonly rejectOperations = new Set<AdmissionOperation>();
  /** Whether some rule reads other objects (spec.references, syntheticRefs.owner): only then are views made. */
  readonly readsReferences: boolean;
  /** Rules that may read a Secret, by namespace/name: their messages are withheld. */
  readonly readsSecrets: ReadonlySet<string>;

  private constructor(readonly rules: readonly CompiledRule[]) {
    const byPath = new Map<CompiledJsonPath, IndexedPath>();
    this.readsReferences = rules.some((r) => r.references !== undefined);
    this.readsSecrets = new Set(rules.filter((r) => r.references?.secrets).map((r) => r.key));
    rules.forEach((rule, at) => {
      for (const op of rule.operations) {
        this.operations.add(op);
        if (rule.type === 'Reject') this.rejectOperations.add(op);
      }
      const item = indexableItem(rule);
      if (!item) {
        this.always.push(at);
        return;
      }
      let path = byPath.get(item.select);
      if (!path) {
        path = { select: item.select, byValue: new Map(), all: [] };
        byPath.set(item.select, path);
        this.paths.push(path);
      }
      path.all.push(at);
      for (const v of new Set(exactValues(item))) {
        const list = path.byValue.get(v);
        if (list) list.push(at);
        else path.byValue.set(v, [at]);
      }
    });
  }

  /** The index of a rulesFor() list, built once per list. */
  static of(rules: readonly CompiledRule[]): RuleIndex {
    let index = indexes.get(rules);
    if (!index) {
      index = new RuleIndex(rules);
      indexes.set(rules, index);
    }
    return index;
  }

  /** Rules that may match the object the cache reads, in evaluation order. */
  candidates(selects: SelectCache): CompiledRule[] {
    if (this.paths.length === 0) return this.rules as CompiledRule[];
    const at = this.always.slice();
    for (const path of this.paths) {
      const results = selects.select(path.select);
      // No value (or a failing select): a non-negated exact criterion cannot match.
      if (results instanceof Error || results.length === 0) continue;
      const v = results.length === 1 && results[0].indices.length === 0 ? results[0].value : undefined;
      // Strings read as themselves (Go's %v); anything else (true, lists, maps, numbers) is matched in full.
      const hits = typeof v === 'string' ? path.byValue.get(v) : path.all;
      if (hits) for (const h of hits) at.push(h);
    }
    at.sort((a, b) => a - b);
    return at.map((i) => this.rules[i]);
  }
}

// syntheticRefs the object always carries when the index reads it; a rule's own references are added later.
const ALWAYS_INJECTED = new Set(['namespace', 'node']);

/**
 * A criterion the index can use: not negated, a fixed path from the root, exact values, and not under a reference
 * only the rule's own view has (syntheticRefs.owner, spec.references).
 */
function isIndexable(item: CompiledMatchItem): boolean {
  if (item.negate || (item.matchValue === undefined && item.matchValues === undefined)) return false;
  const ast = item.select.ast;
  if (ast.kind !== 'path' || ast.root !== '$' || ast.segments.length === 0) return false;
  if (!ast.segments.every((s) => s.type === 'name')) return false;
  const [first, second] = ast.segments;
  return !(
    first.type === 'name' &&
    first.name === 'syntheticRefs' &&
    !(second?.type === 'name' && ALWAYS_INJECTED.has(second.name))
  );
}

function indexableItem(rule: CompiledRule): CompiledMatchItem | undefined {
  let best: CompiledMatchItem | undefined;
  let bestRank = 3;
  for (const item of rule.match) {
    if (!isIndexable(item)) continue;
    const source = item.select.source.trim();
    const rank = PREFERRED.test(source) ? 0 : COARSE.test(source) ? 2 : 1;
    if (rank < bestRank) {
      best = item;
      bestRank = rank;
    }
  }
  return best;
}

// matchValue wins over matchValues, as in the matcher.
function exactValues(item: CompiledMatchItem): readonly string[] {
  return item.matchValue !== undefined ? [item.matchValue] : (item.matchValues ?? []);
}
