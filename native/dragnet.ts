import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { DRAGNET_WEBHOOK } from '../kube/owned';

/**
 * What the dragnet webhook sees: a native policy must see exactly the same requests, or it would patch objects the
 * webhook never does (or miss ones it does).
 */
export interface DragnetMatch {
  /** resourceRules of the dragnet webhook (apiGroups, apiVersions, resources, scope). */
  readonly rules: readonly JsonObject[];
  /** Its namespaceSelector (the admission.kubemod.io/ignore label, the operator's own namespace). */
  readonly namespaceSelector: JsonObject;
  /** Its objectSelector, if any. */
  readonly objectSelector?: JsonObject;
}

/** The resources bundle.yaml's dragnet webhook matches (config/webhook; a test keeps the two equal). */
export const DRAGNET_RESOURCES: readonly string[] = [
  'namespaces',
  'nodes',
  'configmaps',
  'persistentvolumeclaims',
  'persistentvolumes',
  'secrets',
  'services',
  'daemonsets',
  'deployments',
  'replicasets',
  'statefulsets',
  'horizontalpodautoscalers',
  'ingresses',
  'pods',
  'replicationcontrollers',
  'cronjobs',
  'jobs',
  'serviceaccounts',
  'clusterrolebindings',
  'clusterroles',
  'rolebindings',
  'roles',
];

/** bundle.yaml's dragnet scope, for `modrule export` (the operator reads the live webhook configuration). */
export function defaultDragnetMatch(podNamespace = 'kubemod-system'): DragnetMatch {
  return {
    rules: [{ apiGroups: ['*'], apiVersions: ['*'], resources: [...DRAGNET_RESOURCES], scope: '*' }],
    namespaceSelector: {
      matchExpressions: [
        { key: 'admission.kubemod.io/ignore', operator: 'NotIn', values: ['true'] },
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: [...new Set([podNamespace, 'kube-system'])],
        },
      ],
    },
  };
}

/** The dragnet scope of a MutatingWebhookConfiguration; undefined when it has no dragnet webhook. */
export function dragnetMatchOf(configuration: JsonValue): DragnetMatch | undefined {
  if (!isJsonObject(configuration) || !Array.isArray(configuration.webhooks)) return undefined;
  const hook = configuration.webhooks.find((w) => isJsonObject(w) && w.name === DRAGNET_WEBHOOK);
  if (!isJsonObject(hook) || !Array.isArray(hook.rules)) return undefined;
  const rules = hook.rules.filter(isJsonObject).map((r) => {
    const { operations: _ops, ...rest } = r;
    return rest;
  });
  return {
    rules,
    namespaceSelector: isJsonObject(hook.namespaceSelector) ? hook.namespaceSelector : {},
    ...(isJsonObject(hook.objectSelector) ? { objectSelector: hook.objectSelector } : {}),
  };
}
