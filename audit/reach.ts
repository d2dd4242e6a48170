import { CompiledMatchItem, CompiledRule } from '../modrule/compile';
import { itemMatches } from '../engine/match';
import { apiVersionOf, ServedResource } from './types';

/*
 * Which resources a set of rules can reach, so an audit lists only those. A criterion on `$.kind` or `$.apiVersion`
 * depends on nothing else of the object, so it can be decided for a whole resource: it is evaluated, exactly as the
 * engine does, against an object holding only the resource's kind and apiVersion. Any other criterion could match,
 * so a rule without such a criterion reaches every resource. Over-including is safe (the engine decides per object);
 * leaving out a resource a rule could match is not, and cannot happen here.
 */

const TYPE_FIELDS = new Set(['kind', 'apiVersion']);

/** `kind` or `apiVersion` for a criterion on `$.kind`, `$['apiVersion']`...: its outcome depends on nothing else. */
function typeField(item: CompiledMatchItem): string | undefined {
  const ast = item.select.ast;
  if (ast.kind !== 'path' || ast.root !== '$' || ast.segments.length !== 1) return undefined;
  const segment = ast.segments[0];
  return segment.type === 'name' && TYPE_FIELDS.has(segment.name) ? segment.name : undefined;
}

const memo = new WeakMap<CompiledRule, Map<string, boolean>>();

/** Whether the rule can match objects of this kind and apiVersion (its kind/apiVersion criteria all hold). */
export function ruleReaches(rule: CompiledRule, kind: string, apiVersion: string): boolean {
  let known = memo.get(rule);
  if (!known) memo.set(rule, (known = new Map()));
  const key = `${apiVersion}\n${kind}`;
  let reaches = known.get(key);
  if (reaches === undefined) {
    const stub = { apiVersion, kind };
    reaches = rule.match.every((item) => typeField(item) === undefined || itemMatches(item, stub));
    known.set(key, reaches);
  }
  return reaches;
}

// rulesFor() lists are memoized per snapshot and namespace: so is the part of them that reaches a resource.
const reaching = new WeakMap<readonly CompiledRule[], Map<string, CompiledRule[]>>();

/** The rules of a list that take part in an UPDATE of an object of this resource (memoized per list). */
export function rulesReaching(
  rules: readonly CompiledRule[],
  resource: Pick<ServedResource, 'group' | 'version' | 'kind'>,
): CompiledRule[] {
  const apiVersion = apiVersionOf(resource);
  let byResource = reaching.get(rules);
  if (!byResource) reaching.set(rules, (byResource = new Map()));
  const key = `${apiVersion}\n${resource.kind}`;
  let list = byResource.get(key);
  if (!list) {
    list = rules.filter((r) => r.operations.has('UPDATE') && ruleReaches(r, resource.kind, apiVersion));
    byResource.set(key, list);
  }
  return list;
}

/** The kinds a rule names exactly (`$.kind` with matchValue/matchValues, not negated); empty when it names none. */
export function kindsNamed(rule: CompiledRule): string[] {
  const out: string[] = [];
  for (const item of rule.match) {
    if (item.negate || typeField(item) !== 'kind') continue;
    if (item.matchValue !== undefined) out.push(item.matchValue);
    else if (item.matchValues !== undefined) out.push(...item.matchValues);
  }
  return out;
}

/**
 * Resources that can be audited: listable, no subresources, and each (resource, kind) once. The same objects served
 * by two groups (core `events` and `events.k8s.io` `events`) would be listed twice: the core group, then the first
 * group in name order, is kept.
 */
export function auditableResources(served: readonly ServedResource[]): ServedResource[] {
  const byName = new Map<string, ServedResource>();
  const sorted = [...served].sort((a, b) =>
    a.group === b.group ? 0 : a.group === '' ? -1 : b.group === '' ? 1 : a.group < b.group ? -1 : 1,
  );
  for (const r of sorted) {
    if (r.resource.includes('/') || !r.verbs.includes('list')) continue;
    const key = `${r.resource}\n${r.kind}`;
    if (!byName.has(key)) byName.set(key, r);
  }
  return [...byName.values()];
}
