// Test helpers for the scope (excluded from the build): compiled rules from specs, requests as the API server
// matches them.
import { JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { ResourceCatalog } from './catalog';
import { computeScope, ScopeInput, ScopeResult } from './compute';
import { defaultConfigured } from './defaults';
import { sendsRequest } from './sends';
import { Scope, ScopeOperation, ScopeRequest } from './types';

/** A compiled ModRule of `namespace` with this spec (throws on an invalid one). */
export function rule(namespace: string, name: string, spec: JsonObject): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace },
    spec,
  });
  if (!compiled) throw new Error(`test rule ${namespace}/${name}: ${JSON.stringify(problems)}`);
  return compiled;
}

/** A Patch rule matching one kind (or several), in the style of KubeMod's README. */
export function kindRule(
  namespace: string,
  name: string,
  kind: string | string[],
  extra: JsonObject = {},
): CompiledRule {
  return rule(namespace, name, {
    type: 'Patch',
    match: [
      typeof kind === 'string'
        ? { select: '$.kind', matchValue: kind }
        : { select: '$.kind', matchValues: kind },
    ],
    patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
    ...extra,
  });
}

const KINDS: Record<string, { group: string; version: string; resource: string; cluster?: boolean }> = {
  ConfigMap: { group: '', version: 'v1', resource: 'configmaps' },
  Secret: { group: '', version: 'v1', resource: 'secrets' },
  Pod: { group: '', version: 'v1', resource: 'pods' },
  Event: { group: '', version: 'v1', resource: 'events' },
  Namespace: { group: '', version: 'v1', resource: 'namespaces', cluster: true },
  Node: { group: '', version: 'v1', resource: 'nodes', cluster: true },
  Deployment: { group: 'apps', version: 'v1', resource: 'deployments' },
  StatefulSet: { group: 'apps', version: 'v1', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', version: 'v1', resource: 'daemonsets' },
  ReplicaSet: { group: 'apps', version: 'v1', resource: 'replicasets' },
  Job: { group: 'batch', version: 'v1', resource: 'jobs' },
  CronJob: { group: 'batch', version: 'v1', resource: 'cronjobs' },
  ReplicationController: { group: '', version: 'v1', resource: 'replicationcontrollers' },
  Lease: { group: 'coordination.k8s.io', version: 'v1', resource: 'leases' },
  ClusterRole: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', cluster: true },
  Widget: { group: 'example.com', version: 'v1', resource: 'widgets' },
};

/** The apiVersion of a test kind. */
export function apiVersionOf(kind: string): string {
  const k = KINDS[kind];
  return k.group ? `${k.group}/${k.version}` : k.version;
}

/** Whether a test kind is cluster-scoped. */
export function isClusterKind(kind: string): boolean {
  return KINDS[kind].cluster === true;
}

/** The kinds requests can be made for. */
export const TEST_KINDS = Object.keys(KINDS);

/** A CRD manifest for Widget (example.com/v1, namespaced). */
export const WIDGET_CRD: JsonObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
  },
};

/** The API server's view of a request for `kind` in `namespace` ('' for cluster-scoped kinds). */
export function request(
  operation: ScopeOperation,
  kind: string,
  namespace: string,
  labels: Record<string, string> = {},
): ScopeRequest {
  const k = KINDS[kind];
  // For a Namespace object the selector reads the object's own labels; its name stands in as namespace here.
  const ns = k.cluster ? (kind === 'Namespace' ? namespace : '') : namespace;
  return {
    operation,
    group: k.group,
    version: k.version,
    resource: k.resource,
    namespace: ns,
    clusterScoped: k.cluster === true,
    namespaceLabels: ns ? { 'kubernetes.io/metadata.name': ns, ...labels } : { ...labels },
  };
}

/** A wildcard net (`resources: ['*']`, every operation the dragnet sees) with the bundle's exclusions. */
export const WILDCARD_NET: Scope = {
  ...defaultConfigured(),
  rules: [
    {
      apiGroups: ['*'],
      apiVersions: ['*'],
      resources: ['*'],
      operations: ['CREATE', 'UPDATE', 'DELETE'],
      scope: '*',
    },
  ],
};

/** computeScope with the bundle's net and Kubernetes' built-in kinds (plus Widget) unless given. */
export function scopeOf(rules: CompiledRule[], input: Partial<ScopeInput> = {}): ScopeResult {
  return computeScope({
    rules,
    clusterNamespace: 'kubemod-system',
    configured: defaultConfigured(),
    catalog: ResourceCatalog.builtin([WIDGET_CRD]),
    ...input,
  });
}

/** Whether the computed registration sends the request. */
export function sends(result: ScopeResult, r: ScopeRequest): boolean {
  return sendsRequest(result.registration, result.clauses, r);
}
