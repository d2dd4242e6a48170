import { CompiledRule } from '../rule/compile';
import { itemPin, PinnedField, pinnedValues } from '../rule/pins';
import { apiVersionOf, ListableResource } from './types';

/*
 * Which resources a set of rules can reach, so an audit lists only those. The dragnet scope's pins (rule/pins.ts)
 * say what a rule's criteria require of `$.kind` and `$.apiVersion` (values, or a regex; a negated criterion requires
 * nothing): a resource whose kind or apiVersion breaks a pin cannot hold an object the rule matches. Over-including
 * is safe (the engine decides per object); leaving out a resource a rule could match is not, and cannot happen here.
 */

const memo = new WeakMap<CompiledRule, Map<string, boolean>>();

function allows(rule: CompiledRule, field: PinnedField, value: string): boolean {
  for (const item of rule.match) {
    const pin = itemPin(item, field);
    if (pin && ('values' in pin ? !pin.values.has(value) : !pin.regex.test(value))) return false;
  }
  return true;
}

/** Whether the rule can match objects of this kind and apiVersion (no pin of its criteria excludes them). */
export function ruleReaches(rule: CompiledRule, kind: string, apiVersion: string): boolean {
  let known = memo.get(rule);
  if (!known) memo.set(rule, (known = new Map()));
  const key = `${apiVersion}\n${kind}`;
  let reaches = known.get(key);
  if (reaches === undefined) {
    reaches = allows(rule, 'kind', kind) && allows(rule, 'apiVersion', apiVersion);
    known.set(key, reaches);
  }
  return reaches;
}

// rulesFor() lists are memoized per snapshot and namespace: so is the part of them that reaches a resource.
const reaching = new WeakMap<readonly CompiledRule[], Map<string, CompiledRule[]>>();

/** The rules of a list that take part in an UPDATE of an object of this resource (memoized per list). */
export function rulesReaching(
  rules: readonly CompiledRule[],
  resource: Pick<ListableResource, 'group' | 'version' | 'kind'>,
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

/** The kinds a rule's criteria pin it to; empty when they pin none. */
export function kindsNamed(rule: CompiledRule): string[] {
  return [...(pinnedValues(rule.match, 'kind') ?? [])];
}

/**
 * Resources that can be audited: listable, no subresources, and each (resource, kind) once. The same objects served
 * by two groups (core `events` and `events.k8s.io` `events`) would be listed twice: the core group, then the first
 * group in name order, is kept.
 */
export function auditableResources(served: readonly ListableResource[]): ListableResource[] {
  const byName = new Map<string, ListableResource>();
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
