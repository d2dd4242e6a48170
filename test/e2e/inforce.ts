// Shared by the "in force when its write returns" suites: the kinds their rounds rotate through, rules that label
// them, and what the live dragnet registration sends.
import { JsonObject } from '../../util/json';
import { KubeClient } from '../../kube/kube';
import { dragnetOf, readScope } from '../../scope/entry';
import { sendsRequest } from '../../scope/sends';
import { Scope } from '../../scope/types';

export const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
export const MUTATING =
  '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration';
export const LABEL = 'inforce';

/** A namespaced kind of the bundle's net, with a minimal object of it as kubectl would send it. */
export interface RoundKind {
  kind: string;
  group: string;
  resource: string;
  path: (ns: string) => string;
  object: (ns: string, name: string) => JsonObject;
}

const core = (kind: string, resource: string, body: JsonObject = {}): RoundKind => ({
  kind,
  group: '',
  resource,
  path: (ns) => `/api/v1/namespaces/${ns}/${resource}`,
  object: (namespace, name) => ({ apiVersion: 'v1', kind, metadata: { name, namespace }, ...body }),
});

export const KINDS: RoundKind[] = [
  core('ConfigMap', 'configmaps', { data: { a: 'b' } }),
  core('Secret', 'secrets', { stringData: { a: 'b' } }),
  core('ServiceAccount', 'serviceaccounts'),
  core('Service', 'services', { spec: { ports: [{ port: 80 }] } }),
  {
    kind: 'Role',
    group: 'rbac.authorization.k8s.io',
    resource: 'roles',
    path: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
    object: (namespace, name) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: [],
    }),
  },
];

/** A ModRule labelling every object of `kind` in its namespace with inforce=<value>. */
export function labelRule(namespace: string, name: string, kind: string, value: string): JsonObject {
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace },
    spec: {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: kind }],
      patch: [{ op: 'add', path: `/metadata/labels/${LABEL}`, value: `"${value}"` }],
    },
  };
}

export const labelsOf = (obj: JsonObject) => ((obj.metadata as JsonObject).labels ?? {}) as JsonObject;

/** The live dragnet registration. */
export async function liveRegistration(admin: KubeClient): Promise<Scope> {
  return readScope(dragnetOf(await admin.request('GET', MUTATING))!.webhook);
}

/**
 * Whether the registration may send a CREATE of `kind` in `namespace` (a namespace the object webhooks see): its
 * rules and namespaceSelector, its conditions left out. False means it certainly does not: a rule for it must widen.
 */
export function maySend(reg: Scope, kind: RoundKind, namespace: string, scopeLabel: string): boolean {
  return sendsRequest({ ...reg, matchConditions: [] }, [], {
    operation: 'CREATE',
    group: kind.group,
    version: 'v1',
    resource: kind.resource,
    namespace,
    clusterScoped: false,
    namespaceLabels: { 'kubernetes.io/metadata.name': namespace, [scopeLabel]: 'true' },
  });
}

/** Milliseconds since `start` (hrtime), to 0.1 ms. */
export function since(start: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - start) / 1e5) / 10;
}
