import { isJsonObject, JsonObject } from '../util/json';
import { CompiledRule } from '../rule/compile';

/** Labels of a Namespace manifest (string values only); undefined when the Namespace is not known. */
export function namespaceLabels(ns: JsonObject | undefined): Readonly<Record<string, string>> | undefined {
  if (!ns) return undefined;
  const labels = isJsonObject(ns.metadata) ? ns.metadata.labels : undefined;
  const out: Record<string, string> = {};
  if (isJsonObject(labels))
    for (const [k, v] of Object.entries(labels)) if (typeof v === 'string') out[k] = v;
  return out;
}

/**
 * Whether a cluster-namespace rule applies to objects in another namespace: it must name its targets (regex
 * and/or selector), and every one given must match. A selector never matches a Namespace the store does not know.
 */
export function targetsNamespace(
  rule: CompiledRule,
  namespace: string,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const regex = rule.targetNamespaceRegex;
  const selector = rule.targetNamespaceSelector;
  if (!regex && !selector) return false;
  if (regex && !regex.test(namespace)) return false;
  return !selector || (labels !== undefined && selector.matches(labels));
}

/**
 * Whether a cluster-namespace rule applies to cluster-scoped objects: no regex or one that matches "" (KubeMod),
 * and no targetNamespaceSelector (there is no Namespace whose labels could match).
 */
export function targetsClusterScoped(rule: CompiledRule): boolean {
  if (rule.targetNamespaceSelector) return false;
  return !rule.targetNamespaceRegex || rule.targetNamespaceRegex.test('');
}

/** Whether two label sets are equal (undefined only equals undefined). */
export function sameLabels(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k] && k in b);
}
