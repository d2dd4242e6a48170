import { compileLabelSelector } from '../rule/labelselector';
import { JsonValue } from '../util/json';
import { Condition, evaluate } from './condition';
import { Scope, ScopeRequest, WebhookRule } from './types';

function listed(list: readonly string[], value: string): boolean {
  return list.includes('*') || list.includes(value);
}

/** Whether one webhook rule matches the request (top-level resources; the dragnet never sees subresources). */
export function ruleMatches(rule: WebhookRule, r: ScopeRequest): boolean {
  if (!listed(rule.operations, r.operation)) return false;
  if (!listed(rule.apiGroups, r.group) || !listed(rule.apiVersions, r.version)) return false;
  if (!rule.resources.some((x) => x === '*' || x === '*/*' || x === r.resource || x === `${r.resource}/*`))
    return false;
  return rule.scope === '*' || rule.scope === (r.clusterScoped ? 'Cluster' : 'Namespaced');
}

/** Whether the namespaceSelector lets the request through (cluster-scoped objects other than Namespaces always). */
export function selectorMatches(reg: Scope, r: ScopeRequest): boolean {
  const isNamespace = r.group === '' && r.resource === 'namespaces';
  if (r.clusterScoped && !isNamespace) return true;
  let invalid = false;
  const selector = compileLabelSelector(reg.namespaceSelector as JsonValue, 'namespaceSelector', () => {
    invalid = true;
  });
  return !invalid && selector !== undefined && selector.matches(r.namespaceLabels);
}

/**
 * Whether the API server sends the request to a webhook with this registration, given the conditions as data
 * (`clauses`; the registration's own expressions from elsewhere are not evaluated here).
 */
export function sendsRequest(reg: Scope, clauses: readonly Condition[], r: ScopeRequest): boolean {
  if (!reg.rules.some((rule) => ruleMatches(rule, r))) return false;
  if (!selectorMatches(reg, r)) return false;
  const input = {
    operation: r.operation,
    group: r.group,
    resource: r.resource,
    namespace: r.namespace,
    object: r.operation === 'DELETE' ? undefined : r.object,
  };
  return clauses.every((c) => evaluate(c, input));
}
