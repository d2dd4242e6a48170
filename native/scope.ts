import type { CompiledRule } from '../rule/compile';
import type { LabelSelector } from '../rule/labelselector';
import { and, celString, or } from './cel';
import { NoCelForm } from './values';

/*
 * Which requests a rule applies to, as the store and engine decide it: a namespace's rules apply to objects in that
 * namespace; rules of the cluster namespace apply to objects in it, to cluster-scoped objects (no
 * targetNamespaceRegex, or one matching ""; never with a selector), and to objects in namespaces their regex
 * (unanchored RE2, as CEL's matches()) and label selector pick. Namespace objects count as cluster-scoped.
 */

/** The subject's namespace as the engine sees it: '' for cluster-scoped objects and for Namespaces. */
const SCOPE_NAMESPACE =
  '((request.kind.group == "" && request.kind.kind == "Namespace") || ' +
  '([dyn(request.operation == "DELETE" ? oldObject : object)].all(s, s[?"kind"].orValue("") == "Namespace" && ' +
  's[?"apiVersion"].orValue("") == "v1")) ? "" : (has(request.namespace) ? request.namespace : ""))';

/** CEL that holds for the requests the rule applies to. Throws NoCelForm. */
export function scopeCondition(rule: CompiledRule, clusterNamespace: string): string {
  const ns = `${SCOPE_NAMESPACE}`;
  if (rule.namespace !== clusterNamespace) return `${ns} == ${celString(rule.namespace)}`;
  const source = rule.source?.spec;
  const regex = rule.targetNamespaceRegex;
  const selector = source?.targetNamespaceSelector;
  if (rule.targetNamespaceSelector && !selector)
    throw new NoCelForm('targetNamespaceSelector needs the rule source (compile with keepSource)');
  const clusterScoped = !rule.targetNamespaceSelector && (!regex || regex.test(''));
  const targeted =
    regex || selector
      ? and([
          `${ns} != ""`,
          regex ? `${ns}.matches(${celString(regex.source)})` : 'true',
          selector ? selectorCel(selector) : 'true',
        ])
      : 'false';
  return or([`${ns} == ${celString(clusterNamespace)}`, clusterScoped ? `${ns} == ""` : 'false', targeted]);
}

/** A label selector over the namespace's labels (namespaceObject: the API server's view of the Namespace). */
export function selectorCel(selector: LabelSelector): string {
  const labels = 'namespaceObject.metadata.labels';
  const has = (k: string) => `${labels}[?${celString(k)}].hasValue()`;
  const parts: string[] = ['namespaceObject != null'];
  for (const [k, v] of Object.entries(selector.matchLabels ?? {}))
    parts.push(`(${has(k)} && ${labels}[${celString(k)}] == ${celString(v)})`);
  for (const req of selector.matchExpressions ?? []) {
    const values = `[${(req.values ?? []).map(celString).join(', ')}]`;
    const k = celString(req.key);
    switch (req.operator) {
      case 'In':
        parts.push(`(${has(req.key)} && ${labels}[${k}] in ${values})`);
        break;
      case 'NotIn':
        parts.push(`(!(${has(req.key)}) || !(${labels}[${k}] in ${values}))`);
        break;
      case 'Exists':
        parts.push(has(req.key));
        break;
      case 'DoesNotExist':
        parts.push(`!(${has(req.key)})`);
        break;
      default:
        throw new NoCelForm(`label selector operator ${String(req.operator)}`);
    }
  }
  return and(parts);
}
