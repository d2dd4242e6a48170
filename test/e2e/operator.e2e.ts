import { randomBytes } from 'node:crypto';
import { JsonObject } from '../../json/value';
import { createLogger, silentLogger } from '../../log/logger';
import { createKubeClient, KubeApiError, KubeClient, loadKubeConfig } from '../../operator/kube';
import { RunningOperator, startOperator } from '../../operator/start';
import { apply, crdManifest, e2eSettings, remove, waitFor, webhookManifests } from './cluster';

/*
 * End-to-end: a real cluster (KUBECONFIG), this process as the operator, webhooks called by URL.
 * Run with `npm run e2e`; see docs/operator.md for kind. Without KUBECONFIG every test is skipped.
 */

const CLUSTER = Boolean(process.env.KUBECONFIG);
if (!CLUSTER) {
  process.stderr.write('e2e: KUBECONFIG is not set; skipping the end-to-end suite (see docs/operator.md).\n');
}
const describeCluster = CLUSTER ? describe : describe.skip;

const settings = e2eSettings();
const run = randomBytes(3).toString('hex');
const NS = `modrule-e2e-${run}`;
const SCOPE_LABEL = `modrule-e2e-${run}`;
const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
const CONFIGMAPS = `/api/v1/namespaces/${NS}/configmaps`;

function modRule(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}

function labelConfigMaps(value: string): JsonObject {
  return modRule(NS, 'label-configmaps', {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/e2e-color', value: `"${value}"` }],
  });
}

function readyCondition(rule: JsonObject): JsonObject | undefined {
  const status = (rule.status ?? {}) as JsonObject;
  return ((status.conditions ?? []) as JsonObject[]).find((c) => c.type === 'Ready');
}

let counter = 0;
/** Creates a fresh ConfigMap and returns the stored object (labels included). */
async function createConfigMap(client: KubeClient, data: Record<string, string> = {}): Promise<JsonObject> {
  const name = `cm-${++counter}-${randomBytes(2).toString('hex')}`;
  return client.request('POST', CONFIGMAPS, {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data },
  });
}

const labelsOf = (obj: JsonObject) => ((obj.metadata as JsonObject).labels ?? {}) as JsonObject;

describeCluster(`operator against the cluster in KUBECONFIG (namespace ${NS})`, () => {
  let client: KubeClient;
  let operator: RunningOperator | null = null;

  beforeAll(async () => {
    client = createKubeClient(loadKubeConfig());
    const crd = crdManifest();
    await apply(client, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    await waitFor('the ModRule CRD to be established', async () => {
      const got = await client.request(
        'GET',
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/modrules.api.kubemod.io',
      );
      const conditions = ((got.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
      return conditions.some((c) => c.type === 'Established' && c.status === 'True');
    });
    for (const name of [NS, settings.clusterNamespace]) {
      await apply(client, '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: name === NS ? { [SCOPE_LABEL]: 'true' } : {} },
      });
    }
    // Stored before the validating webhook exists: how invalid rules reach a cluster (e.g. from a KubeMod era).
    await apply(
      client,
      MODRULES(NS),
      modRule(NS, 'broken', { type: 'Reject', match: [{ select: '$.kind', matchRegex: '(abc' }] }),
    );

    const { mutating, validating } = webhookManifests(
      `https://${settings.webhookHost}:${settings.webhookPort}`,
      SCOPE_LABEL,
    );
    await apply(client, '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', mutating);
    await apply(client, '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', validating);

    operator = await startOperator(
      {
        clusterNamespace: settings.clusterNamespace,
        podNamespace: settings.clusterNamespace,
        webhookPort: settings.webhookPort,
        healthPort: 0,
        host: '0.0.0.0',
        certMode: 'self',
        certDir: '',
        extraHosts: [settings.webhookHost],
      },
      { client, logger: process.env.E2E_LOG ? createLogger('debug') : silentLogger() },
    );
    await waitFor('the operator to be ready', async () => operator?.isReady());
    // caBundle is set by the operator at start-up; wait until the API server can call us.
    await waitFor('the webhook to admit ModRules', async () => {
      await apply(client, MODRULES(NS), labelConfigMaps('blue'));
      return true;
    });
  });

  afterAll(async () => {
    await operator?.stop();
    if (!client) return;
    // Webhooks first: a Fail-policy webhook pointing at a stopped process would block ModRule writes.
    await remove(
      client,
      '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration',
    );
    await remove(
      client,
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kubemod-validating-webhook-configuration',
    );
    await remove(client, `${MODRULES(settings.clusterNamespace)}/e2e-${run}-node-zone`);
    await remove(
      client,
      `/api/v1/namespaces/${settings.clusterNamespace}/secrets/kubemod-webhook-server-cert`,
    );
    await remove(client, `/api/v1/namespaces/${NS}`);
  });

  it('sets caBundle on every webhook from the certificate Secret', async () => {
    const secret = await client.request(
      'GET',
      `/api/v1/namespaces/${settings.clusterNamespace}/secrets/kubemod-webhook-server-cert`,
    );
    const ca = String((secret.data as JsonObject)['ca.crt']);
    for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
      const name = kind.startsWith('mutating')
        ? 'kubemod-mutating-webhook-configuration'
        : 'kubemod-validating-webhook-configuration';
      const config = await client.request('GET', `/apis/admissionregistration.k8s.io/v1/${kind}/${name}`);
      for (const hook of config.webhooks as JsonObject[])
        expect((hook.clientConfig as JsonObject).caBundle).toBe(ca);
    }
  });

  it('patches objects with a rule from the cluster', async () => {
    const cm = await waitFor('a ConfigMap to be labelled', async () => {
      const created = await createConfigMap(client);
      return labelsOf(created)['e2e-color'] === 'blue' ? created : undefined;
    });
    expect(labelsOf(cm)['e2e-color']).toBe('blue');
  });

  it('reports Ready=True on a valid rule, and Ready=False with the field path plus an Event on an invalid one', async () => {
    const valid = await waitFor('Ready=True on label-configmaps', async () => {
      const r = await client.request('GET', `${MODRULES(NS)}/label-configmaps`);
      return readyCondition(r)?.status === 'True' ? r : undefined;
    });
    expect(readyCondition(valid)).toMatchObject({ reason: 'Valid' });
    const broken = await waitFor('Ready=False on broken', async () => {
      const r = await client.request('GET', `${MODRULES(NS)}/broken`);
      return readyCondition(r)?.status === 'False' ? r : undefined;
    });
    expect(readyCondition(broken)).toMatchObject({
      reason: 'Invalid',
      message: expect.stringContaining('spec.match[0].matchRegex'),
    });
    const events = await waitFor('an InvalidModRule event', async () => {
      const list = await client.request('GET', `/api/v1/namespaces/${NS}/events`, {
        query: { fieldSelector: 'involvedObject.name=broken' },
      });
      const items = (list.items ?? []) as JsonObject[];
      return items.some((e) => e.reason === 'InvalidModRule') ? items : undefined;
    });
    expect(events.find((e) => e.reason === 'InvalidModRule')).toMatchObject({ type: 'Warning' });
  });

  it('refuses an invalid ModRule at admission with the field path', async () => {
    const err = await client
      .request('POST', MODRULES(NS), {
        body: modRule(NS, 'also-broken', { type: 'Reject', match: [{ select: '$.kind', matchRegex: '(' }] }),
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).message).toContain('spec.match[0].matchRegex');
  });

  it('rejects objects with a Reject rule', async () => {
    await apply(
      client,
      MODRULES(NS),
      modRule(NS, 'reject-forbidden', {
        type: 'Reject',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.data.forbidden', matchValue: 'yes' },
        ],
        rejectMessage: 'forbidden ConfigMaps are not allowed here',
      }),
    );
    const err = await waitFor('the Reject rule to take effect', async () => {
      try {
        await createConfigMap(client, { forbidden: 'yes' });
        return undefined;
      } catch (e) {
        return e as KubeApiError;
      }
    });
    expect(err.message).toContain('forbidden ConfigMaps are not allowed here');
    await createConfigMap(client, { forbidden: 'no' }); // others still pass
    await remove(client, `${MODRULES(NS)}/reject-forbidden`);
  });

  it('applies rule updates and deletions', async () => {
    await apply(client, MODRULES(NS), labelConfigMaps('green'));
    await waitFor(
      'the updated rule to take effect',
      async () => labelsOf(await createConfigMap(client))['e2e-color'] === 'green',
    );
    await remove(client, `${MODRULES(NS)}/label-configmaps`);
    await waitFor(
      'the deleted rule to stop applying',
      async () => labelsOf(await createConfigMap(client))['e2e-color'] === undefined,
    );
  });

  it('injects the Node manifest into pods that ask for it, after they are bound', async () => {
    await apply(
      client,
      MODRULES(settings.clusterNamespace),
      modRule(settings.clusterNamespace, `e2e-${run}-node-zone`, {
        type: 'Patch',
        targetNamespaceRegex: `^${NS}$`,
        admissionOperations: ['UPDATE'],
        match: [{ select: '$.kind', matchValue: 'Pod' }, { select: '$.syntheticRefs.node.metadata.labels' }],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/e2e-node',
            value: '"{{ .Target.syntheticRefs.node.metadata.name }}"',
          },
        ],
      }),
    );
    // A new namespace gets its default ServiceAccount a moment later; pods cannot be created before that.
    await waitFor('the pod to be created', async () => {
      try {
        await client.request('POST', `/api/v1/namespaces/${NS}/pods`, {
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'node-ref', annotations: { 'ref.kubemod.io/inject-node-ref': 'true' } },
            spec: {
              containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.9' }],
              terminationGracePeriodSeconds: 0,
            },
          },
        });
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 409)) throw err; // created by an earlier try
      }
      return true;
    });
    const pod = await waitFor('the pod to carry its node', async () => {
      const p = await client.request('GET', `/api/v1/namespaces/${NS}/pods/node-ref`);
      return labelsOf(p)['e2e-node'] ? p : undefined;
    });
    const spec = pod.spec as JsonObject;
    expect(labelsOf(pod)['e2e-node']).toBe(spec.nodeName);
    expect(((pod.metadata as JsonObject).annotations as JsonObject)['ref.kubemod.io/node']).toBe(
      spec.nodeName,
    );
  });
});
