import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { JsonObject } from '../../util/json';
import { createLogger, silentLogger } from '../../util/logger';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { RunningOperator, startOperator } from '../../operator/start';
import { NativeMode } from '../../operator/native/controller';
import { policyCollection, SERVE_ANNOTATION } from '../../native';
import { apply, bundleObjects, ClusterLedger, remove, waitFor, webhookManifests } from './cluster';
import { freePort } from './controlplane';
import { E2eCluster } from './target';

/*
 * Set-up shared by the native-policy e2e files: a control plane with the bundle (webhooks called by URL and scoped
 * to one labelled namespace), and the operator under test running with the bundle's ServiceAccount.
 */

const run = randomBytes(3).toString('hex');
export const NS = `native-e2e-${run}`;
export const SCOPE = `native-e2e-${run}`;
const SA = 'kubemod-operator';
export const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
export const CONFIGMAPS = `/api/v1/namespaces/${NS}/configmaps`;

export const readyOf = (rule: JsonObject) =>
  (((rule.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]).find(
    (c) => c.type === 'Ready',
  );
export const servedBy = (rule: JsonObject) => (rule.status as JsonObject | undefined)?.servedBy;
export const labelsOf = (o: JsonObject) => ((o.metadata as JsonObject).labels ?? {}) as JsonObject;

export function modRule(name: string, spec: JsonObject, native = true): JsonObject {
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace: NS, ...(native ? { annotations: { [SERVE_ANNOTATION]: 'true' } } : {}) },
    spec,
  };
}

export function labelRule(name: string, label: string, value: string, native = true): JsonObject {
  return modRule(
    name,
    {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: `/metadata/labels/${label}`, value }],
    },
    native,
  );
}

/** A client with the bundle's ServiceAccount (TokenRequest), so the bundle's RBAC is what is tested. */
async function serviceAccountClient(admin: KubeClient, base: KubeConfig): Promise<KubeClient> {
  const path = `/api/v1/namespaces/kubemod-system/serviceaccounts/${SA}/token`;
  const answer = await waitFor('a ServiceAccount token', () =>
    admin.request('POST', path, {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      },
    }),
  );
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  const cluster = base.getCurrentCluster()!;
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: SA, token: String((answer.status as JsonObject).token) }],
    contexts: [{ name: 'sa', cluster: cluster.name, user: SA }],
    currentContext: 'sa',
  });
  return createKubeClient(kubeConfigAccess(kc));
}

/** A control plane with the bundle (but webhooks called by URL, scoped to SCOPE) and the operator under test. */
export async function setUp(
  cp: E2eCluster,
  mode: NativeMode,
): Promise<{
  admin: KubeClient;
  operator: RunningOperator;
  url: string;
}> {
  const kc = cp.kubeConfig();
  const admin = createKubeClient(kubeConfigAccess(kc));
  const ledger = new ClusterLedger(admin);
  for (const obj of bundleObjects()) {
    if (obj.kind === 'MutatingWebhookConfiguration' || obj.kind === 'ValidatingWebhookConfiguration')
      continue;
    await ledger.apply(obj);
  }
  await ledger.apply({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: NS, labels: { [SCOPE]: 'true' } },
  });
  const port = await freePort();
  const url = `https://${cp.webhookHost}:${port}`;
  const { mutating, validating } = webhookManifests(url, SCOPE);
  await ledger.apply(mutating);
  await ledger.apply(validating);
  await waitFor('the ModRule CRD', async () => {
    await admin.request('GET', MODRULES(NS));
    return true;
  });
  const operator = await startOperator(
    {
      clusterNamespace: 'kubemod-system',
      podNamespace: 'kubemod-system',
      webhookPort: port,
      healthPort: 0,
      host: cp.listenHost,
      certMode: 'self',
      certDir: '',
      extraHosts: [cp.webhookHost],
      nativePolicies: mode,
      nativeSettleMs: 300,
    },
    {
      client: await serviceAccountClient(admin, kc),
      logger: process.env.E2E_LOG ? createLogger('debug') : silentLogger(),
    },
  );
  await waitFor('the operator to be ready', async () => operator.isReady());
  await waitFor('the webhook to admit ModRules', async () => {
    await apply(admin, MODRULES(NS), labelRule('probe', 'probe', 'x', false));
    return true;
  });
  await remove(admin, `${MODRULES(NS)}/probe`);
  return { admin, operator, url };
}

export async function rule(admin: KubeClient, name: string): Promise<JsonObject> {
  return admin.request('GET', `${MODRULES(NS)}/${name}`);
}

export async function servedNatively(admin: KubeClient, name: string): Promise<JsonObject> {
  return waitFor(`${name} to be served natively`, async () => {
    const r = await rule(admin, name);
    return servedBy(r) === 'Native' ? r : undefined;
  });
}

let counter = 0;
export async function configMap(admin: KubeClient, annotations: JsonObject = {}): Promise<JsonObject> {
  return admin.request('POST', CONFIGMAPS, {
    body: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${++counter}`, annotations },
      data: {},
    },
  });
}

export const policyPath = (kind: string, name: string) => `${policyCollection(kind)}/${name}`;
