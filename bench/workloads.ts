import { JsonObject } from '../util/json';
import { stableStringify } from '../engine/stable-stringify';

/** The namespace the realistic Deployment is created in. */
export const APP_NAMESPACE = 'shop';
export const CLUSTER_NAMESPACE = 'kubemod-system';
/** Rules in scope for the Deployment, and how many of them match it. */
export const REALISTIC_OWN = 100;
export const REALISTIC_WIDE = 50;
export const MATCHING = 15;
export const CROWDED_NAMESPACES = 1000;
export const CROWDED_PER_NAMESPACE = 10;
export const COPIES = 1000;

const IMAGES = [
  'registry.example.com/shop/web:1.42.0',
  'registry.example.com/platform/envoy:1.27.2',
  'registry.example.com/platform/log-shipper:2.1.0',
];

/**
 * What the user wrote: a Deployment with three containers, env, probes, resources and volumes (as a typical app
 * chart renders it); `kubectl apply` puts it, compact and key-sorted, into last-applied-configuration.
 */
function userManifest(namespace: string): JsonObject {
  const labels = {
    app: 'web',
    'app.kubernetes.io/name': 'web',
    'app.kubernetes.io/instance': 'web-prod',
    'app.kubernetes.io/part-of': 'shop',
    'app.kubernetes.io/managed-by': 'kubectl',
    team: 'checkout',
  };
  const container = (image: string, i: number): JsonObject => ({
    name: ['web', 'envoy', 'log-shipper'][i],
    image,
    ports: [{ containerPort: 8080 + i, name: `port-${i}` }],
    env: Array.from({ length: i === 0 ? 3 : 1 }, (_, j) => ({
      name: `SETTING_${j}`,
      value: `value-${i}-${j}`,
    })),
    resources: {
      requests: { cpu: `${100 * (i + 1)}m`, memory: `${128 * (i + 1)}Mi` },
      limits: { memory: `${256 * (i + 1)}Mi` },
    },
    ...(i === 0
      ? {
          readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 5 },
          livenessProbe: { httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 10 },
          volumeMounts: [{ name: 'config', mountPath: '/etc/web' }],
        }
      : {}),
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace,
      labels,
      annotations: { 'deployment.kubernetes.io/revision': '1', 'team.example.com/owner': 'checkout' },
    },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels },
        spec: {
          containers: IMAGES.map(container),
          volumes: [{ name: 'config', configMap: { name: 'web-config' } }],
          serviceAccountName: 'web',
        },
      },
    },
  };
}

/** The Deployment as the API server hands it to the webhook on CREATE: defaults, managedFields, last-applied. */
export function realisticDeployment(namespace = APP_NAMESPACE): JsonObject {
  const user = userManifest(namespace);
  const obj = JSON.parse(JSON.stringify(user)) as JsonObject;
  const meta = obj.metadata as JsonObject;
  (meta.annotations as JsonObject)['kubectl.kubernetes.io/last-applied-configuration'] =
    stableStringify(user) + '\n';
  Object.assign(meta, {
    creationTimestamp: '2026-11-23T10:00:00Z',
    generation: 1,
    uid: '4f7c2d7e-6a1b-4a55-9c1d-2f0e8b7a9c01',
    managedFields: [
      {
        apiVersion: 'apps/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {} }, 'f:labels': { '.': {} } }, 'f:spec': {} },
        manager: 'kubectl-client-side-apply',
        operation: 'Update',
        time: '2026-11-23T10:00:00Z',
      },
    ],
  });
  const spec = obj.spec as JsonObject;
  Object.assign(spec, {
    progressDeadlineSeconds: 600,
    revisionHistoryLimit: 10,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
  });
  const podSpec = (spec.template as { spec: JsonObject }).spec;
  Object.assign(podSpec, {
    dnsPolicy: 'ClusterFirst',
    restartPolicy: 'Always',
    schedulerName: 'default-scheduler',
    securityContext: {},
    terminationGracePeriodSeconds: 30,
  });
  for (const c of podSpec.containers as JsonObject[]) {
    Object.assign(c, {
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
    });
    for (const p of c.ports as JsonObject[]) p.protocol = 'TCP';
  }
  obj.status = {};
  return obj;
}

/** The AdmissionReview body `kubectl apply` causes (the object above, CREATE). */
export function realisticReview(namespace = APP_NAMESPACE): string {
  const gvk = { group: 'apps', version: 'v1', kind: 'Deployment' };
  const gvr = { group: 'apps', version: 'v1', resource: 'deployments' };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '00000000-0000-4000-8000-000000000010',
      kind: gvk,
      resource: gvr,
      requestKind: gvk,
      requestResource: gvr,
      name: 'web',
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
      object: realisticDeployment(namespace),
      oldObject: null,
      dryRun: false,
      options: {
        apiVersion: 'meta.k8s.io/v1',
        kind: 'CreateOptions',
        fieldManager: 'kubectl-client-side-apply',
        fieldValidation: 'Strict',
      },
    },
  });
}

/**
 * One rule of the workloads: `$.kind`, `$.metadata.labels.app` and a matchRegex on the images, one templated
 * annotation. `matches` picks whether it matches the realistic Deployment.
 */
export function workloadRule(namespace: string, n: number, matches: boolean, wide = false): JsonObject {
  const team = ['shop', 'platform', 'data'][n % 3];
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `rule-${String(n).padStart(5, '0')}`, namespace },
    spec: {
      type: 'Patch',
      ...(wide ? { targetNamespaceRegex: `^(${APP_NAMESPACE}|team-.*)$` } : {}),
      match: [
        { select: '$.kind', matchValue: 'Deployment' },
        { select: '$.metadata.labels.app', matchValue: matches ? 'web' : `app-${n}` },
        {
          select: '$.spec.template.spec.containers[*].image',
          matchRegex: `^registry\\.example\\.com/(${team}|platform)/`,
        },
      ],
      patch: [
        { op: 'add', path: `/metadata/annotations/rule-${n}`, value: `{{ .Target.metadata.name }}-${n}` },
      ],
    },
  };
}

/** 100 rules of the app namespace and 50 cluster-wide ones; every tenth matches (15). */
export function realisticRules(): JsonObject[] {
  const out: JsonObject[] = [];
  for (let n = 0; n < REALISTIC_OWN + REALISTIC_WIDE; n++) {
    const wide = n >= REALISTIC_OWN;
    out.push(workloadRule(wide ? CLUSTER_NAMESPACE : APP_NAMESPACE, n, n % 10 === 0, wide));
  }
  return out;
}

/** The realistic rules plus 10,000 rules over 1,000 other namespaces (half would match there). */
export function crowdedRules(): JsonObject[] {
  const out = realisticRules();
  let n = 1000;
  for (let t = 0; t < CROWDED_NAMESPACES; t++) {
    const ns = `team-${String(t).padStart(4, '0')}`;
    for (let r = 0; r < CROWDED_PER_NAMESPACE; r++, n++) out.push(workloadRule(ns, n, r % 2 === 0));
  }
  return out;
}

/** GitOps-generated copies: 1,000 rules with the same select, regex and template text, differing in name and path. */
export function copiesRules(): JsonObject[] {
  return Array.from({ length: COPIES }, (_, n): JsonObject => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `copy-${String(n).padStart(4, '0')}`, namespace: 'copies' },
    spec: {
      type: 'Patch',
      match: [
        { select: '$.kind', matchValue: 'Deployment' },
        { select: '$.metadata.labels.app', matchValue: 'web' },
        { select: '$.spec.template.spec.containers[*].image', matchRegex: '^registry\\.example\\.com/' },
      ],
      patch: [
        { op: 'add', path: `/metadata/annotations/copy-${n}`, value: '{{ .Target.metadata.name }}-copy' },
      ],
    },
  }));
}

/** `total` rules in the app namespace of which `matching` match the Deployment (scaling rows). */
export function scalingRules(total: number, matching = MATCHING): JsonObject[] {
  const every = total / matching;
  return Array.from({ length: total }, (_, n) =>
    workloadRule(APP_NAMESPACE, n, Math.floor(n % every) === 0 && Math.floor(n / every) < matching),
  );
}

/** Namespace objects for every namespace the workloads use. */
export function workloadNamespaces(): JsonObject[] {
  const names = [APP_NAMESPACE, CLUSTER_NAMESPACE, 'copies'];
  for (let t = 0; t < CROWDED_NAMESPACES; t++) names.push(`team-${String(t).padStart(4, '0')}`);
  return names.map((name) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'kubernetes.io/metadata.name': name } },
  }));
}

/** Rules of the app namespace that match the realistic Deployment and fail at run time (a division by zero). */
export function failingRules(count: number): JsonObject[] {
  return Array.from({ length: count }, (_, n) => {
    const rule = workloadRule(APP_NAMESPACE, 90_000 + n, true);
    const spec = rule.spec as JsonObject;
    return {
      ...rule,
      spec: { ...spec, patch: [{ op: 'add', path: `/metadata/labels/ratio-${n}`, value: '{{ div 1 0 }}' }] },
    };
  });
}
