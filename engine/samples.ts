import { JsonObject } from '../util/json';
import { POD_CONTROLLER_KINDS, POD_CONTROLLERS } from '../rule/pod-controllers';

/*
 * Built-in sample objects, for checks that run a rule without objects of the user's (the idempotence warning at
 * admission): a Pod as a ReplicaSet creates it, the same pod template in every controller kind, and a few other
 * common kinds. Images from Docker Hub (official and not), quay.io and a registry with a port.
 */

const POD_LABELS = { app: 'web', 'app.kubernetes.io/name': 'web' };

function podSpec(): JsonObject {
  return {
    initContainers: [{ name: 'init', image: 'busybox:1.36', command: ['sh', '-c', 'true'] }],
    containers: [
      {
        name: 'web',
        image: 'nginx:1.25',
        ports: [{ containerPort: 80, protocol: 'TCP' }],
        resources: { requests: { cpu: '100m', memory: '64Mi' } },
      },
      {
        name: 'exporter',
        image: 'quay.io/prometheus/node-exporter:v1.8.0',
        resources: { limits: { memory: '64Mi' } },
      },
      { name: 'cache', image: 'localhost:5000/cache:dev' },
      { name: 'tools', image: 'bitnami/kubectl' },
    ],
    restartPolicy: 'Always',
    serviceAccountName: 'default',
  };
}

/** Fresh sample objects in `namespace`. */
export function sampleObjects(namespace: string): JsonObject[] {
  const pod: JsonObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-x2x5k', namespace, labels: { ...POD_LABELS }, annotations: {} },
    spec: podSpec(),
  };
  const controllers = POD_CONTROLLER_KINDS.map((kind): JsonObject => {
    const { apiVersion, template } = POD_CONTROLLERS[kind];
    const podTemplate: JsonObject = { metadata: { labels: { ...POD_LABELS } }, spec: podSpec() };
    // Built from the template's path: spec.template, or a CronJob's spec.jobTemplate.spec.template.
    let inner: JsonObject = podTemplate;
    for (let i = template.length - 1; i > 0; i--) inner = { [template[i]]: inner };
    const spec = inner;
    return {
      apiVersion,
      kind,
      metadata: { name: 'web', namespace, labels: { ...POD_LABELS } },
      spec:
        kind === 'CronJob'
          ? { schedule: '0 3 * * *', ...spec }
          : { selector: { matchLabels: { app: 'web' } }, ...spec },
    };
  });
  return [
    pod,
    ...controllers,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace, labels: { ...POD_LABELS } },
      spec: {
        selector: { app: 'web' },
        ports: [{ port: 80, targetPort: 80, protocol: 'TCP' }],
        type: 'ClusterIP',
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'web', namespace, labels: { ...POD_LABELS } },
      data: { 'nginx.conf': 'server {}' },
    },
  ];
}
