import type { CompiledRule } from '../rule/compile';
import { factsOf, RuleFacts } from './facts';

/*
 * Whether two rules can match the same object: never a false "no" (a finding missed is better than none, but a
 * "no" here hides real conflicts only where the rules provably cannot meet). They cannot when their operations,
 * namespaces, kinds or the exact values of one fixed field exclude each other, or when one requires a field the
 * other requires absent.
 */

/** Whether a cluster-namespace rule can see objects of `namespace` ('' : the namespace of rules without one). */
function clusterRuleSees(rule: CompiledRule, namespace: string): boolean {
  if (!rule.targetNamespaceRegex && !rule.targetNamespaceSelector) return false;
  // A selector is decided by the Namespace's labels, unknown here: it may.
  return !rule.targetNamespaceRegex || namespace === '' || rule.targetNamespaceRegex.test(namespace);
}

function namespacesMeet(a: CompiledRule, b: CompiledRule, clusterNamespace: string): boolean {
  const aCluster = a.namespace === clusterNamespace;
  const bCluster = b.namespace === clusterNamespace;
  if (aCluster && bCluster) return true;
  if (aCluster) return clusterRuleSees(a, b.namespace);
  if (bCluster) return clusterRuleSees(b, a.namespace);
  return a.namespace === b.namespace;
}

function operationsMeet(a: CompiledRule, b: CompiledRule): boolean {
  for (const op of a.operations) if (b.operations.has(op)) return true;
  return false;
}

/** The kinds both can match: null for any, an empty set for none. */
export function sharedKinds(a: RuleFacts, b: RuleFacts): ReadonlySet<string> | null {
  if (!a.kinds) return b.kinds;
  if (!b.kinds) return a.kinds;
  return new Set([...a.kinds].filter((k) => b.kinds!.has(k)));
}

function fieldsMeet(a: RuleFacts, b: RuleFacts): boolean {
  for (const [path, values] of a.fixed) {
    const other = b.fixed.get(path);
    if (other && ![...values].some((v) => other.has(v))) return false;
    const not = b.excluded.get(path);
    if (not === 'absent' || (not && [...values].every((v) => not.has(v)))) return false;
  }
  for (const [path, not] of a.excluded) {
    const values = b.fixed.get(path);
    if (values && (not === 'absent' || [...values].every((v) => not.has(v)))) return false;
  }
  return true;
}

/** Whether the two rules may both match one object in one admission. */
export function mayMeet(a: CompiledRule, b: CompiledRule, clusterNamespace: string): boolean {
  if (!operationsMeet(a, b) || !namespacesMeet(a, b, clusterNamespace)) return false;
  const fa = factsOf(a);
  const fb = factsOf(b);
  const kinds = sharedKinds(fa, fb);
  return (kinds === null || kinds.size > 0) && fieldsMeet(fa, fb);
}
