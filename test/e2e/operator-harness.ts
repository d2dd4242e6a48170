import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { JsonObject } from '../../util/json';
import { createLogger, silentLogger } from '../../util/logger';
import { KubeApiError, KubeClient, MERGE_PATCH } from '../../kube/kube';
import { OperatorConfig, RunningOperator, startOperator } from '../../operator/start';
import { ClusterLedger, waitFor, webhookManifests } from './cluster';
import { ControlPlaneOptions } from './controlplane';
import { serviceAccountClient } from './credentials';
import { installBundle } from './install';
import { kubectl } from './kubectl';
import { E2eCluster, startCluster } from './target';

/*
 * What most e2e suites set up: a cluster (target.ts), bundle.yaml installed as a user applies it except that the
 * webhook configurations call this process by URL and the object webhooks only see namespaces labelled
 * `scopeLabel=true`, and operators running in this process with the bundle ServiceAccount's token. Everything it
 * creates goes through a ClusterLedger, so an existing cluster is left as it was found.
 */

export const CLUSTER_NS = 'kubemod-system';
export const OPERATOR_SA = 'kubemod-operator';

export interface OperatorHarness {
  cluster: E2eCluster;
  admin: KubeClient;
  ledger: ClusterLedger;
  /** The bundle ServiceAccount's client: what the operator runs with. */
  operatorClient: KubeClient;
  scopeLabel: string;
  /** The URL the webhook configurations call (the first operator's port). */
  url: string;
  /** Starts an operator in this process (on the configurations' port unless `port` is given). */
  start(config?: Partial<OperatorConfig>, port?: number): Promise<RunningOperator>;
  stop(op: RunningOperator): Promise<void>;
  /** Creates a namespace the object webhooks see (deleted at the end). */
  namespace(name: string, labels?: Record<string, string>): Promise<void>;
  /** kubectl apply -f of these objects as one file (YAML documents); resolves with kubectl's result. */
  applyFile(
    objects: JsonObject[],
    args?: string[],
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  tearDown(): Promise<void>;
}

/** Sets up the cluster, the bundle, the webhook configurations and the operator's credentials (no operator yet). */
export async function operatorHarness(
  scopeLabel: string,
  options: ControlPlaneOptions = {},
): Promise<OperatorHarness> {
  const cluster = await startCluster(options);
  const admin = cluster.admin();
  const ledger = new ClusterLedger(admin);
  await installBundle(admin, ledger);
  const port = await cluster.webhookPort();
  const url = `https://${cluster.webhookHost}:${port}`;
  const { mutating, validating } = webhookManifests(url, scopeLabel);
  await ledger.apply(mutating);
  await ledger.apply(validating);
  ledger.track(`/api/v1/namespaces/${CLUSTER_NS}/secrets/kubemod-webhook-server-cert`);
  const sa = await serviceAccountClient(admin, cluster.kubeConfig(), CLUSTER_NS, OPERATOR_SA);
  const operators: RunningOperator[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'modrule-e2e-apply-'));
  let files = 0;
  const harness: OperatorHarness = {
    cluster,
    admin,
    ledger,
    operatorClient: sa.client,
    scopeLabel,
    url,
    start: async (config = {}, p = port) => {
      const op = await startOperator(
        {
          clusterNamespace: CLUSTER_NS,
          podNamespace: CLUSTER_NS,
          webhookPort: p,
          healthPort: 0,
          host: cluster.listenHost,
          certMode: 'self',
          certDir: '',
          extraHosts: [cluster.webhookHost],
          ...config,
        },
        { client: sa.client, logger: process.env.E2E_LOG ? createLogger('debug') : silentLogger() },
      );
      operators.push(op);
      return op;
    },
    stop: async (op) => {
      operators.splice(operators.indexOf(op), 1);
      await op.stop();
    },
    namespace: async (name, labels = {}) => {
      await ledger.apply({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { [scopeLabel]: 'true', ...labels } },
      });
    },
    applyFile: (objects, args = []) => {
      if (!cluster.kubectl) throw new Error('e2e: no kubectl (set E2E_KUBECTL)');
      const file = join(dir, `apply-${++files}.yaml`);
      writeFileSync(file, objects.map((o) => stringify(o)).join('---\n'));
      return kubectl(cluster.kubectl, cluster.kubeConfigPath, ['apply', '-f', file, ...args], '');
    },
    tearDown: async () => {
      for (const op of [...operators]) await harness.stop(op);
      if (sa.dir) rmSync(sa.dir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
      // The webhook configurations go first: a Fail-policy webhook pointing at a stopped process blocks ModRules.
      const problems = await ledger.restore();
      await cluster.stop();
      if (problems.length > 0)
        throw new Error(`e2e: the cluster is not as it was found:\n${problems.join('\n')}`);
    },
  };
  return harness;
}

/**
 * Makes a Node look schedulable without a kubelet (../shared/envtest-1.37/README.md): capacity and a Ready condition
 * through the status subresource, and without the not-ready taint the API server put on it at creation.
 */
export async function schedulableNode(
  admin: KubeClient,
  ledger: ClusterLedger,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  await ledger.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
  const resources = { cpu: '8', memory: '32Gi', pods: '110' };
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await admin.request('PATCH', `/api/v1/nodes/${name}/status`, {
    contentType: MERGE_PATCH,
    body: {
      status: {
        capacity: resources,
        allocatable: resources,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'e2e: a Node without a kubelet',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
      },
    },
  });
  await waitFor(`Node ${name} without the not-ready taint`, async () => {
    const node = await admin.request('GET', `/api/v1/nodes/${name}`);
    const taints = ((node.spec as JsonObject | undefined)?.taints ?? []) as JsonObject[];
    if (taints.length === 0) return true;
    await admin.request('PATCH', `/api/v1/nodes/${name}`, {
      contentType: MERGE_PATCH,
      body: { spec: { taints: taints.filter((t) => !String(t.key).startsWith('node.kubernetes.io/')) } },
    });
    return undefined;
  });
}

/**
 * The namespace's default ServiceAccount, which a pod needs before it can be created: the controller-manager's when
 * one runs (waited for a while), else made here.
 */
export async function defaultServiceAccount(admin: KubeClient, namespace: string): Promise<void> {
  const path = `/api/v1/namespaces/${namespace}/serviceaccounts`;
  await waitFor('the default ServiceAccount', () => admin.request('GET', `${path}/default`), 10_000).catch(
    async () => {
      try {
        await admin.request('POST', path, {
          body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } },
        });
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 409)) throw err;
      }
    },
  );
}

/** Binds a pod to a Node as a scheduler does (POST pods/NAME/binding). */
export async function bindPod(
  admin: KubeClient,
  namespace: string,
  name: string,
  node: string,
): Promise<void> {
  await admin.request('POST', `/api/v1/namespaces/${namespace}/pods/${name}/binding`, {
    body: { apiVersion: 'v1', kind: 'Binding', metadata: { name }, target: { kind: 'Node', name: node } },
  });
}
