import { JsonObject } from '../../json/value';
import { crdManifest, e2eSettings, webhookManifests } from './cluster';

describe('e2e manifests', () => {
  const { mutating, validating } = webhookManifests('https://172.18.0.1:9443', 'modrule-e2e-x');
  const hooks = [...(mutating.webhooks as JsonObject[]), ...(validating.webhooks as JsonObject[])];

  it('keeps the four KubeMod webhooks, each calling the local operator by URL on its own path', () => {
    const byName = Object.fromEntries(hooks.map((h) => [h.name, (h.clientConfig as JsonObject).url]));
    expect(byName).toEqual({
      'mmodrule.kubemod.io': 'https://172.18.0.1:9443/mutate-api-kubemod-io-v1beta1-modrule',
      'dragnet.kubemod.io': 'https://172.18.0.1:9443/dragnet-webhook',
      'podbinding.kubemod.io': 'https://172.18.0.1:9443/podbinding-webhook',
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
    expect(e2eSettings({ E2E_WEBHOOK_HOST: '10.0.0.1', E2E_WEBHOOK_PORT: '10443' })).toEqual({
      webhookHost: '10.0.0.1',
      webhookPort: 10443,
      clusterNamespace: 'kubemod-system',
    });
  });
});
