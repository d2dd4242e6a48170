import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { CertTiming, splitPem } from './certificates';
import { createKubeClient } from '../../kube/kube';
import { bundleFromSecret, SelfSignedCertificates } from './self-signed';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';

const NS = 'kubemod-system';
const SECRET = '/api/v1/namespaces/kubemod-system/secrets';
const timing: CertTiming = {
  caDays: 100,
  servingDays: 30,
  servingRenewBeforeDays: 5,
  caRenewBeforeDays: 20,
  caPropagationMs: 60_000,
};

function webhookConfigs(api: FakeApiServer): void {
  const hook = (name: string, path: string) => ({
    name,
    clientConfig: { service: { name: 'kubemod-webhook-service', namespace: NS, path } },
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
  });
  api.put('mutatingwebhookconfigurations', {
    metadata: { name: 'kubemod-mutating-webhook-configuration' },
    webhooks: [
      hook('dragnet.kubemod.io', '/dragnet-webhook'),
      hook('mmodrule.kubemod.io', '/mutate'),
      hook('podbinding.kubemod.io', '/podbinding-webhook'),
    ],
  });
  api.put('validatingwebhookconfigurations', {
    metadata: { name: 'kubemod-validating-webhook-configuration' },
    webhooks: [hook('vmodrule.kubemod.io', '/validate')],
  });
}

function caBundles(api: FakeApiServer): string[] {
  return ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'].flatMap((r) => {
    const name = r.startsWith('mutating')
      ? 'kubemod-mutating-webhook-configuration'
      : 'kubemod-validating-webhook-configuration';
    const config = api.get(r as 'mutatingwebhookconfigurations', null, name);
    return ((config?.webhooks ?? []) as JsonObject[]).map((w) =>
      String((w.clientConfig as JsonObject).caBundle ?? ''),
    );
  });
}

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');

describe('SelfSignedCertificates against the fake API server', () => {
  let api: FakeApiServer;
  const running: SelfSignedCertificates[] = [];
  let clock = new Date('2026-03-01T00:00:00Z');

  beforeEach(async () => {
    api = await FakeApiServer.start();
    webhookConfigs(api);
    clock = new Date('2026-03-01T00:00:00Z');
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await api.close();
  });

  function replica(): SelfSignedCertificates {
    const r = new SelfSignedCertificates({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      namespace: NS,
      timing,
      now: () => clock,
      pollIntervalMs: 50,
    });
    running.push(r);
    return r;
  }

  it('creates the Secret once, serves it, and sets caBundle on all four webhooks', async () => {
    const tls = await replica().start();
    const secret = api.get('secrets', NS, 'kubemod-webhook-server-cert');
    expect(secret).toMatchObject({ type: 'kubernetes.io/tls' });
    expect(Object.keys(secret?.data as JsonObject).sort()).toEqual([
      'ca.crt',
      'ca.key',
      'tls.crt',
      'tls.key',
    ]);
    const bundle = bundleFromSecret(secret!)!;
    expect(tls.current()).toEqual({ cert: bundle.cert, key: bundle.key });
    expect(caBundles(api).map(decode)).toEqual([bundle.caCert, bundle.caCert, bundle.caCert, bundle.caCert]);

    // A second replica starting later reuses it and patches nothing.
    const patchesBefore = api.requestsTo('PATCH', /webhookconfigurations/).length;
    const tls2 = await replica().start();
    expect(tls2.current()).toEqual(tls.current());
    expect(api.requestsTo('POST', SECRET)).toHaveLength(1);
    expect(api.requestsTo('PATCH', /webhookconfigurations/)).toHaveLength(patchesBefore);
  });

  it('two replicas starting at once agree on one CA (the loser of the create race reads the winner)', async () => {
    const [a, b] = await Promise.all([replica().ensure(), replica().ensure()]);
    expect(a).toEqual(b);
    expect(api.requestsTo('POST', SECRET)).toHaveLength(2);
    expect(bundleFromSecret(api.get('secrets', NS, 'kubemod-webhook-server-cert')!)).toEqual(a);
  });

  it('renews near expiry; the other replica sees the Secret change and swaps its served certificate', async () => {
    const r1 = replica();
    const r2 = replica();
    await r1.start();
    const tls2 = await r2.start();
    const original = tls2.current().cert;
    const swapped: string[] = [];
    tls2.subscribe((m) => swapped.push(m.cert));

    clock = new Date(clock.getTime() + 27 * 24 * 3600 * 1000); // serving cert expires within 5 days
    await r1.check();
    const renewed = bundleFromSecret(api.get('secrets', NS, 'kubemod-webhook-server-cert')!)!;
    expect(renewed.cert).not.toBe(original);
    expect(api.requestsTo('PUT', `${SECRET}/kubemod-webhook-server-cert`)).toHaveLength(1);
    await eventually(() => swapped.length === 1);
    expect(swapped[0]).toBe(renewed.cert);
    expect(r2.current()?.cert).toBe(renewed.cert);
  });

  it('concurrent renewals conflict on resourceVersion and converge on one certificate', async () => {
    const r1 = replica();
    const r2 = replica();
    await r1.ensure();
    clock = new Date(clock.getTime() + 27 * 24 * 3600 * 1000);
    const [a, b] = await Promise.all([r1.ensure(), r2.ensure()]);
    expect(a).toEqual(b);
    expect(bundleFromSecret(api.get('secrets', NS, 'kubemod-webhook-server-cert')!)).toEqual(a);
  });

  it('publishes old and new CA in caBundle during a CA rollover', async () => {
    const r1 = replica();
    await r1.start();
    const firstCa = bundleFromSecret(api.get('secrets', NS, 'kubemod-webhook-server-cert')!)!.caCert;
    clock = new Date(clock.getTime() + 85 * 24 * 3600 * 1000);
    await r1.check();
    const bundle = bundleFromSecret(api.get('secrets', NS, 'kubemod-webhook-server-cert')!)!;
    expect(splitPem(bundle.caCert)).toHaveLength(2);
    expect(splitPem(bundle.caCert)[1]).toBe(firstCa);
    expect(bundle.caRotatedAt).toBe(clock.toISOString());
    expect(new Set(caBundles(api).map(decode))).toEqual(new Set([bundle.caCert]));
  });

  it('puts caBundle back when someone removes it, and recreates a deleted Secret', async () => {
    const r1 = replica();
    await r1.start();
    const config = api.get(
      'validatingwebhookconfigurations',
      null,
      'kubemod-validating-webhook-configuration',
    )!;
    delete ((config.webhooks as JsonObject[])[0].clientConfig as JsonObject).caBundle;
    api.put('validatingwebhookconfigurations', config);
    await r1.check();
    expect(caBundles(api).every((b) => b !== '')).toBe(true);

    api.remove('secrets', NS, 'kubemod-webhook-server-cert');
    await eventually(() => api.get('secrets', NS, 'kubemod-webhook-server-cert') !== undefined);
  });

  it('restores caBundle within moments when the configurations are deleted and re-created without it', async () => {
    const r1 = replica();
    await r1.start();
    const want = bundleFromSecret(api.get('secrets', NS, 'kubemod-webhook-server-cert')!)!.caCert;
    await eventually(() => api.openWatches === 2);
    // What a GitOps tool does when it re-applies bundle.yaml (KubeMod issue #112); the hourly check is far away.
    api.remove('mutatingwebhookconfigurations', null, 'kubemod-mutating-webhook-configuration');
    api.remove('validatingwebhookconfigurations', null, 'kubemod-validating-webhook-configuration');
    const wiped = Date.now();
    webhookConfigs(api);
    expect(caBundles(api)).toEqual(['', '', '', '']);
    await eventually(() => caBundles(api).every((b) => decode(b) === want), 3000);
    expect(Date.now() - wiped).toBeLessThan(1000);
    // The watch is narrowed to the two names, as the RBAC rules (resourceNames) require.
    const watches = api.requests.filter((r) => /webhookconfigurations$/.test(r.path) && r.query.watch);
    expect(new Set(watches.map((r) => r.query.fieldSelector))).toEqual(
      new Set([
        'metadata.name=kubemod-mutating-webhook-configuration',
        'metadata.name=kubemod-validating-webhook-configuration',
      ]),
    );
    // Our own patch comes back as a watch event: no further patches follow.
    const patches = api.requestsTo('PATCH', /webhookconfigurations/).length;
    await new Promise((r) => setTimeout(r, 300));
    expect(api.requestsTo('PATCH', /webhookconfigurations/)).toHaveLength(patches);
  });
});
