import { JsonObject } from '../../util/json';

/** A ModRule as `kubectl apply` would create it (tests only). */
export function modRule(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}

/** A valid Patch rule: labels every Deployment. */
export function labelRule(namespace: string, name: string, label = 'patched'): JsonObject {
  return modRule(namespace, name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'Deployment' }],
    patch: [{ op: 'add', path: `/metadata/labels/${label}`, value: '"yes"' }],
  });
}

/** An invalid rule: its regex does not compile. */
export function brokenRule(namespace: string, name: string): JsonObject {
  return modRule(namespace, name, {
    type: 'Reject',
    match: [{ select: '$.kind', matchRegex: '(abc' }],
  });
}

export function namespace(name: string, labels: Record<string, string> = {}): JsonObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

export function node(name: string, labels: Record<string, string> = {}): JsonObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } };
}
