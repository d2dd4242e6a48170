import { JsonObject } from '../../util/json';
import { createKubeClient } from '../../kube/kube';
import { FakeApiServer } from '../../operator/testing/fake-apiserver';
import {
  bundleObjects,
  ClusterLedger,
  collectionOf,
  crdManifest,
  e2eSettings,
  webhookManifests,
} from './cluster';
import { webhookHostFor } from './target';

describe('e2e manifests', () => {
  const { mutating, validating } = webhookManifests('https://172.18.0.1:9443', 'modrule-e2e-x');
  const hooks = [...(mutating.webhooks as JsonObject[]), ...(validating.webhooks as JsonObject[])];

  it("keeps the four KubeMod webhooks and the dragnet's probe, each calling the local operator by URL on its own path", () => {
    const byName = Object.fromEntries(hooks.map((h) => [h.name, (h.clientConfig as JsonObject).url]));
    expect(byName).toEqual({
      'mmodrule.kubemod.io': 'https://172.18.0.1:9443/mutate-api-kubemod-io-v1beta1-modrule',
      'dragnet.kubemod.io': 'https://172.18.0.1:9443/dragnet-webhook',
      'podbinding.kubemod.io': 'https://172.18.0.1:9443/podbinding-webhook',
      'dragnet-probe.kubemod.io': 'https://172.18.0.1:9443/dragnet-probe',
      'vmodrule.kubemod.io': 'https://172.18.0.1:9443/validate-api-kubemod-io-v1beta1-modrule',
    });
    expect(hooks.every((h) => (h.clientConfig as JsonObject).service === undefined)).toBe(true);
  });

  it('confines the object webhooks to the test namespace', () => {
    for (const h of hooks.filter((h) =>
      ['dragnet.kubemod.io', 'podbinding.kubemod.io'].includes(String(h.name)),
    )) {
      expect(h.namespaceSelector).toEqual({ matchLabels: { 'modrule-e2e-x': 'true' } });
    }
  });

  it('installs a CRD with the status subresource the operator writes to', () => {
    const crd = crdManifest();
    const versions = (crd.spec as JsonObject).versions as JsonObject[];
    expect(versions.find((v) => v.name === 'v1beta1')?.subresources).toEqual({ status: {} });
  });

  it('reads its settings from the environment', () => {
    expect(e2eSettings({ E2E_CLUSTER_NAMESPACE: 'modrule-e2e' })).toEqual({
      clusterNamespace: 'modrule-e2e',
    });
    // Not a second source of truth for the webhook's address: target.ts alone knows it (a loopback API server).
    expect(e2eSettings({ E2E_WEBHOOK_HOST: '10.0.0.1' })).toEqual({ clusterNamespace: 'kubemod-system' });
  });

  it("calls webhooks on loopback when the API server is there (start.sh's cluster), else at the kind gateway", () => {
    expect(webhookHostFor('https://127.0.0.1:6443', false, {})).toBe('127.0.0.1');
    expect(webhookHostFor('https://localhost:6443', false, {})).toBe('127.0.0.1');
    expect(webhookHostFor('https://127.0.0.1:6443', false, { E2E_WEBHOOK_HOST: '10.0.0.1' })).toBe(
      '10.0.0.1',
    );
    expect(webhookHostFor('https://172.18.0.2:6443', false, {})).toBe('172.18.0.1');
    expect(webhookHostFor('https://127.0.0.1:40000', true, { E2E_WEBHOOK_HOST: '10.0.0.1' })).toBe(
      '127.0.0.1',
    );
  });
});

describe('the e2e suite and bundle.yaml', () => {
  it('knows where every object of the bundle goes', () => {
    const paths = bundleObjects().map(collectionOf);
    expect(paths.length).toBeGreaterThan(10);
    expect(paths).toContain('/apis/policy/v1/namespaces/kubemod-system/poddisruptionbudgets');
  });
});

describe('ClusterLedger', () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = await FakeApiServer.start();
  });
  afterEach(() => api.close());

  it('leaves the cluster as found: created objects deleted, changed ones (labels too) put back', async () => {
    api.put('namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'kube-system', labels: { team: 'platform' } },
    });
    const ledger = new ClusterLedger(createKubeClient(api.access()));
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'kube-system', labels: { 'admission.kubemod.io/ignore': 'true' } },
    });
    await ledger.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kubemod-system' } });
    await ledger.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
    expect((api.get('namespaces', null, 'kube-system')?.metadata as JsonObject).labels).toEqual({
      'admission.kubemod.io/ignore': 'true',
    });
    expect(await ledger.restore()).toEqual([]);
    expect((api.get('namespaces', null, 'kube-system')?.metadata as JsonObject).labels).toEqual({
      team: 'platform',
    });
    expect(api.get('namespaces', null, 'kubemod-system')).toBeUndefined();
    expect(api.get('nodes', null, 'n1')).toBeUndefined();
  });
});
