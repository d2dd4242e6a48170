import { JsonObject } from '../../util/json';
import { stableStringify } from '../../engine/stable-stringify';

/*
 * What the audit suite finds in its namespace before any rule exists, and the rules added afterwards: Deployments as
 * `kubectl apply` creates them (with last-applied-configuration), ConfigMaps as `kubectl create` does.
 */

/** How many of each the namespace holds. */
export const COUNT = 200;

/** A Deployment manifest as a user applies it, with the annotation kubectl adds. */
export function deployment(namespace: string, i: number): JsonObject {
  const name = `web-${String(i).padStart(3, '0')}`;
  const labels: JsonObject = { app: name };
  if (i % 2 === 0) labels.team = 'payments'; // half of them already carry a team
  if (i % 50 === 7) labels.blocked = 'yes'; // a few a later Reject rule (unknown to --rules files) refuses
  const manifest: JsonObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: {
      replicas: 1,
      // Paused, as during a staged rollout: a cluster's deployment controller then makes no ReplicaSet and leaves
      // the object alone after its first status write (the suite compares resourceVersions and counts conflicts).
      paused: true,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            // Every 20th one runs :latest, which a Reject rule refuses.
            {
              name: 'web',
              image: i % 20 === 3 ? 'nginx:latest' : 'nginx:1.27.3',
              ports: [{ containerPort: 80 }],
            },
          ],
        },
      },
    },
  };
  const applied = { ...manifest, metadata: { ...(manifest.metadata as JsonObject), annotations: {} } };
  (manifest.metadata as JsonObject).annotations = {
    'kubectl.kubernetes.io/last-applied-configuration': stableStringify(applied) + '\n',
  };
  return manifest;
}

/** A ConfigMap; some already carry the annotation a rule sets. */
export function configMap(namespace: string, i: number): JsonObject {
  const annotations: JsonObject = i % 4 === 0 ? { owner: 'shop-team' } : {};
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `settings-${String(i).padStart(3, '0')}`, namespace, annotations },
    data: { 'app.properties': `instance=${i}\n` },
  };
}

function modRule(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}

/** The rules a platform team adds once the namespace is full: patches, a cluster-wide Reject, a Namespace rule. */
export function auditRules(namespace: string, clusterNamespace: string, scopeLabel: string): JsonObject[] {
  return [
    modRule(namespace, 'team-label', {
      type: 'Patch',
      match: [
        { select: '$.kind', matchValue: 'Deployment' },
        { select: '$.metadata.labels.team', negate: true },
      ],
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
    }),
    modRule(namespace, 'configmap-owner', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [
        {
          op: 'add',
          path: '/metadata/annotations/owner',
          value: '{{ .Target.syntheticRefs.namespace.metadata.labels.owner }}',
        },
      ],
    }),
    modRule(clusterNamespace, `audit-no-latest-${namespace}`, {
      type: 'Reject',
      targetNamespaceRegex: `^${namespace}$`,
      rejectMessage: '{{ .Target.metadata.name }}: pin the image',
      match: [
        { select: '$.kind', matchValue: 'Deployment' },
        { select: '$.spec.template.spec.containers[*].image', matchRegex: ':latest$' },
      ],
    }),
    modRule(clusterNamespace, `audit-namespace-${namespace}`, {
      type: 'Patch',
      match: [
        { select: '$.kind', matchValue: 'Namespace' },
        { select: `$.metadata.labels['${scopeLabel}']`, matchValue: 'true' },
      ],
      patch: [{ op: 'add', path: '/metadata/labels/audited', value: '"yes"' }],
    }),
  ];
}

/** A Reject rule in the cluster only (not in the --rules file): the dry run meets it in the webhook. */
export function blockerRule(namespace: string): JsonObject {
  return modRule(namespace, 'blocked', {
    type: 'Reject',
    rejectMessage: 'blocked by policy',
    match: [
      { select: '$.kind', matchValue: 'Deployment' },
      { select: '$.metadata.labels.blocked', matchValue: 'yes' },
    ],
  });
}
