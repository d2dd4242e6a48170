import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { JsonObject } from '../util/json';
import type { ClusterAccess } from '../kube/access';
import { deploymentChain } from '../fixtures/owners';
import { APP_NAMESPACE, CLUSTER_NAMESPACE, realisticDeployment } from './workloads';

/** Where the bench's central ConfigMaps live. */
export const CONFIG_NAMESPACE = 'platform';

/** A Pod of the realistic Deployment's ReplicaSet, as the ReplicaSet controller creates it (CREATE review). */
export function ownedPodReview(): string {
  const { pod } = deploymentChain(APP_NAMESPACE);
  const template = (realisticDeployment().spec as JsonObject).template as JsonObject;
  const object: JsonObject = { ...pod, spec: template.spec as JsonObject };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '00000000-0000-4000-8000-000000000020',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: APP_NAMESPACE,
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
      object,
      oldObject: null,
    },
  });
}

/** The Deployment and `count` ReplicaSets of it (the first owns the Pod of ownedPodReview). */
export function replicaSets(count: number): JsonObject[] {
  const { deployment, replicaSet } = deploymentChain(APP_NAMESPACE);
  const out = [deployment, replicaSet];
  for (let i = 1; i < count; i++) {
    const meta = replicaSet.metadata as JsonObject;
    out.push({ ...replicaSet, metadata: { ...meta, name: `web-${i}`, uid: `rs-uid-${i}` } });
  }
  return out;
}

/** Cluster-wide rules copying a label of a Pod's Deployment (two levels up) onto the Pod. */
export function ownerRules(count: number): JsonObject[] {
  return Array.from({ length: count }, (_, i): JsonObject => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `owner-label-${i}`, namespace: CLUSTER_NAMESPACE },
    spec: {
      type: 'Patch',
      targetNamespaceRegex: '.*',
      match: [
        { select: '$.kind', matchValue: 'Pod' },
        { select: '$.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team' },
      ],
      patch: [
        {
          op: 'add',
          path: `/metadata/labels/team-${i}`,
          value: '{{ .Target.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team }}',
        },
      ],
    },
  }));
}

/** The control for ownerRules: the same rules copying a label of the Pod itself (no reference). */
export function ownLabelRules(count: number): JsonObject[] {
  return Array.from({ length: count }, (_, i): JsonObject => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `own-label-${i}`, namespace: CLUSTER_NAMESPACE },
    spec: {
      type: 'Patch',
      targetNamespaceRegex: '.*',
      match: [{ select: '$.kind', matchValue: 'Pod' }, { select: '$.metadata.labels["pod-template-hash"]' }],
      patch: [
        {
          op: 'add',
          path: `/metadata/labels/hash-${i}`,
          value: '{{ index .Target.metadata.labels "pod-template-hash" }}',
        },
      ],
    },
  }));
}

/** `count` cluster-wide rules, rule i naming ConfigMap config-(i % distinct) of CONFIG_NAMESPACE. */
export function referenceRules(count: number, distinct: number): JsonObject[] {
  return Array.from({ length: count }, (_, i): JsonObject => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `config-${i}`, namespace: CLUSTER_NAMESPACE },
    spec: {
      type: 'Patch',
      targetNamespaceRegex: '.*',
      references: [
        {
          name: 'config',
          apiVersion: 'v1',
          kind: 'ConfigMap',
          namespace: CONFIG_NAMESPACE,
          objectName: `config-${i % distinct}`,
        },
      ],
      match: [{ select: '$.kind', matchValue: 'Pod' }, { select: '$.syntheticRefs.config.data.registry' }],
      patch: [
        {
          op: 'add',
          path: `/metadata/annotations/registry-${i}`,
          value: '{{ .Target.syntheticRefs.config.data.registry }}',
        },
      ],
    },
  }));
}

/** A ConfigMap as a platform team keeps one (a few keys, an annotation). */
function configMap(i: number): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `config-${i}`,
      namespace: CONFIG_NAMESPACE,
      uid: `cm-uid-${i}`,
      resourceVersion: String(1000 + i),
      labels: { 'app.kubernetes.io/part-of': 'platform', 'platform.example.com/tier': String(i % 4) },
      annotations: { 'platform.example.com/owner': 'platform-team' },
    },
    data: {
      registry: 'mirror.example.com',
      environment: 'production',
      'settings.yaml': `replicas: 3\nlogLevel: info\nfeature-${i}: enabled\n`.repeat(8),
    },
  };
}

/** Just enough of an API server for the reference caches: discovery of v1 and one namespace's ConfigMaps. */
export const configMapServer = {
  objects(count: number): JsonObject[] {
    return Array.from({ length: count }, (_, i) => configMap(i));
  },

  async start(count: number): Promise<{ access: ClusterAccess; lists(): number; close(): void }> {
    const items = configMapServer.objects(count).map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    let lists = 0;
    const server: Server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('Content-Type', 'application/json');
      if (url.pathname === '/api/v1') {
        res.end(
          JSON.stringify({
            kind: 'APIResourceList',
            groupVersion: 'v1',
            resources: [{ name: 'configmaps', kind: 'ConfigMap', namespaced: true }],
          }),
        );
        return;
      }
      if (url.pathname !== `/api/v1/namespaces/${CONFIG_NAMESPACE}/configmaps`) {
        res.statusCode = 404;
        res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }));
        return;
      }
      if (url.searchParams.get('watch')) return; // stays open: nothing changes
      lists++;
      const limit = Number(url.searchParams.get('limit') ?? items.length);
      const from = Number(url.searchParams.get('continue') ?? 0);
      const next = from + limit < items.length ? String(from + limit) : undefined;
      res.end(
        JSON.stringify({
          kind: 'ConfigMapList',
          metadata: { resourceVersion: '5000', ...(next ? { continue: next } : {}) },
          items: items.slice(from, from + limit),
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    return {
      access: { server: `http://127.0.0.1:${port}`, apply: async () => undefined },
      lists: () => lists,
      close: () => {
        server.closeAllConnections();
        server.close();
      },
    };
  },
};
