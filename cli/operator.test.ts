import { moderateRules } from '../fixtures/hostile';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { silentLogger } from '../util/logger';
import { createKubeClient } from '../kube/kube';
import { RunningOperator } from '../operator/start';
import { eventually } from '../operator/testing/eventually';
import { FakeApiServer } from '../operator/testing/fake-apiserver';
import { brokenRule, labelRule } from '../operator/testing/objects';
import { decodePatch, makeReview, postReview, send } from '../webhook/testing';
import { CommandIO } from './io';
import { DEFAULT_OWNER_KINDS } from '../operator/references/owners';
import { parseOperatorArgs, runOperator } from './operator';

const noSaNamespace = () => undefined;

describe('parseOperatorArgs', () => {
  it('uses the documented defaults', () => {
    expect(parseOperatorArgs([], {}, noSaNamespace)).toEqual({
      clusterNamespace: 'kubemod-system',
      podNamespace: 'kubemod-system',
      webhookPort: 9443,
      healthPort: 8081,
      certMode: 'self',
      certDir: '/tmp/k8s-webhook-server/serving-certs',
      extraHosts: [],
      logLevel: 'info',
      budget: { ms: 100, steps: 1_000_000 },
      nativePolicies: 'opt-in',
      dragnetScope: 'rules',
      recordPatchedBy: false,
      references: { allowSecrets: false, ownerKinds: [...DEFAULT_OWNER_KINDS] },
    });
  });

  it('records the rules that patched an object with --record-patched-by or MODRULE_RECORD_PATCHED_BY=true', () => {
    expect(parseOperatorArgs(['--record-patched-by'], {}, noSaNamespace)).toMatchObject({
      recordPatchedBy: true,
    });
    expect(parseOperatorArgs([], { MODRULE_RECORD_PATCHED_BY: 'True' }, noSaNamespace)).toMatchObject({
      recordPatchedBy: true,
    });
    expect(() => parseOperatorArgs([], { MODRULE_RECORD_PATCHED_BY: 'yes' }, noSaNamespace)).toThrow(
      'MODRULE_RECORD_PATCHED_BY must be true or false, got "yes"',
    );
  });

  it('takes what rules may read from --allow-secret-references and --owner-kinds, or the environment', () => {
    expect(
      parseOperatorArgs(
        ['--allow-secret-references', '--owner-kinds', 'apps/ReplicaSet, argoproj.io/Rollout'],
        {},
        noSaNamespace,
      ),
    ).toMatchObject({
      references: { allowSecrets: true, ownerKinds: ['apps/ReplicaSet', 'argoproj.io/Rollout'] },
    });
    expect(
      parseOperatorArgs(
        [],
        { MODRULE_ALLOW_SECRET_REFERENCES: 'true', MODRULE_OWNER_KINDS: 'batch/Job' },
        noSaNamespace,
      ),
    ).toMatchObject({ references: { allowSecrets: true, ownerKinds: ['batch/Job'] } });
    expect(() => parseOperatorArgs(['--owner-kinds', 'replicasets'], {}, noSaNamespace)).toThrow(
      '--owner-kinds: "replicasets" is not group/Kind',
    );
    expect(() => parseOperatorArgs(['--owner-kinds', 'Secret'], {}, noSaNamespace)).toThrow('never followed');
  });

  it('keeps the wide net with --dragnet-scope wide or MODRULE_DRAGNET_SCOPE=wide', () => {
    expect(parseOperatorArgs(['--dragnet-scope', 'wide'], {}, noSaNamespace)).toMatchObject({
      dragnetScope: 'wide',
    });
    expect(parseOperatorArgs([], { MODRULE_DRAGNET_SCOPE: 'wide' }, noSaNamespace)).toMatchObject({
      dragnetScope: 'wide',
    });
  });

  it('takes the native policy mode from --native-policies, and refuses others', () => {
    expect(parseOperatorArgs(['--native-policies', 'off'], {}, noSaNamespace)).toMatchObject({
      nativePolicies: 'off',
    });
    expect(() => parseOperatorArgs(['--native-policies', 'yes'], {}, noSaNamespace)).toThrow(
      '--native-policies must be one of off, opt-in, all, got "yes"',
    );
  });

  it('takes extra serving-certificate SANs from --cert-extra-sans or MODRULE_CERT_EXTRA_SANS', () => {
    const env = { MODRULE_CERT_EXTRA_SANS: '127.0.0.1, modrule.example.com,::1' };
    expect(parseOperatorArgs([], env, noSaNamespace)).toMatchObject({
      extraHosts: ['127.0.0.1', 'modrule.example.com', '::1'],
    });
    expect(
      parseOperatorArgs(['--cert-extra-sans', '10.0.0.5,*.hooks.local'], env, noSaNamespace),
    ).toMatchObject({ extraHosts: ['10.0.0.5', '*.hooks.local'] });
  });

  it('takes the request budget from flags or the environment, and refuses non-numbers', () => {
    const env = { MODRULE_REQUEST_BUDGET_MS: '250', MODRULE_REQUEST_BUDGET_STEPS: '5000' };
    expect(parseOperatorArgs([], env, noSaNamespace)).toMatchObject({ budget: { ms: 250, steps: 5000 } });
    expect(parseOperatorArgs(['--request-budget-ms', '40'], env, noSaNamespace)).toMatchObject({
      budget: { ms: 40, steps: 5000 },
    });
    expect(() => parseOperatorArgs([], { MODRULE_REQUEST_BUDGET_MS: '0' }, noSaNamespace)).toThrow(
      /MODRULE_REQUEST_BUDGET_MS must be a positive integer, got "0"/,
    );
    expect(() => parseOperatorArgs(['--request-budget-steps', '1e6'], {}, noSaNamespace)).toThrow(
      /--request-budget-steps must be a positive integer/,
    );
  });

  it('reads the environment, and flags win over it', () => {
    const env = {
      MODRULE_CLUSTER_NAMESPACE: 'rules',
      MODRULE_WEBHOOK_PORT: '10443',
      MODRULE_HEALTH_PORT: '9090',
      MODRULE_CERT_MODE: 'external',
      MODRULE_CERT_DIR: '/certs',
      MODRULE_LOG_LEVEL: 'debug',
      POD_NAMESPACE: 'ops',
      MODRULE_NATIVE_POLICIES: 'all',
    };
    expect(parseOperatorArgs([], env, noSaNamespace)).toEqual({
      clusterNamespace: 'rules',
      podNamespace: 'ops',
      webhookPort: 10443,
      healthPort: 9090,
      certMode: 'external',
      certDir: '/certs',
      extraHosts: [],
      logLevel: 'debug',
      budget: { ms: 100, steps: 1_000_000 },
      nativePolicies: 'all',
      dragnetScope: 'rules',
      recordPatchedBy: false,
      references: { allowSecrets: false, ownerKinds: [...DEFAULT_OWNER_KINDS] },
    });
    expect(
      parseOperatorArgs(
        ['--webhook-port', '1', '--cert-mode', 'self', '--log-level=warn'],
        env,
        noSaNamespace,
      ),
    ).toMatchObject({
      webhookPort: 1,
      certMode: 'self',
      logLevel: 'warn',
      healthPort: 9090,
    });
  });

  it("takes the operator's namespace from the service account when POD_NAMESPACE is unset", () => {
    expect(parseOperatorArgs([], {}, () => 'from-sa')).toMatchObject({ podNamespace: 'from-sa' });
  });

  it.each([
    [['--cert-mode', 'auto'], {}, /--cert-mode must be "self" or "external"/],
    [[], { MODRULE_CERT_MODE: 'auto' }, /MODRULE_CERT_MODE must be/],
    [['--webhook-port', '70000'], {}, /--webhook-port must be a port number/],
    [[], { MODRULE_HEALTH_PORT: 'x' }, /MODRULE_HEALTH_PORT must be a port number/],
    [['--log-level', 'trace'], {}, /--log-level must be one of/],
    [['--cluster-namespace', 'Bad_NS'], {}, /not a valid namespace name/],
    [['--nope'], {}, /unknown option/],
    [['--cert-extra-sans', 'Not_A_Host'], {}, /"Not_A_Host" is neither a DNS name nor an IP/],
    [[], { MODRULE_CERT_EXTRA_SANS: '1.2.3.4.5' }, /MODRULE_CERT_EXTRA_SANS: "1.2.3.4.5"/],
    [['--cert-mode', 'external', '--cert-extra-sans', '127.0.0.1'], {}, /only applies to --cert-mode self/],
    [['--dragnet-scope', 'narrow'], {}, /--dragnet-scope must be "rules" or "wide", got "narrow"/],
  ])('rejects %j %j', (args, env, message) => {
    expect(() => parseOperatorArgs(args, env, noSaNamespace)).toThrow(message);
  });

  it('answers --help', () => {
    expect(parseOperatorArgs(['--help'], {}, noSaNamespace)).toBe('help');
  });
});

const io: CommandIO = { stdout: () => undefined, stderr: () => undefined, readStdin: async () => '' };

function webhookConfigurations(api: FakeApiServer): void {
  api.put('mutatingwebhookconfigurations', {
    metadata: { name: 'kubemod-mutating-webhook-configuration' },
    webhooks: [{ name: 'dragnet.kubemod.io', clientConfig: { url: 'https://127.0.0.1/dragnet-webhook' } }],
  });
  api.put('validatingwebhookconfigurations', {
    metadata: { name: 'kubemod-validating-webhook-configuration' },
    webhooks: [{ name: 'vmodrule.kubemod.io', clientConfig: { url: 'https://127.0.0.1/validate' } }],
  });
}

describe('modrule operator, in-process against the fake API server', () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = await FakeApiServer.start();
    webhookConfigurations(api);
  });
  afterEach(() => api.close());

  async function start(
    extraArgs: string[] = [],
  ): Promise<{ operator: RunningOperator; stop: () => Promise<number> }> {
    const controller = new AbortController();
    let started: RunningOperator | null = null;
    // The webhook is called at https://127.0.0.1: the flag puts that IP in the serving certificate.
    const args = [
      '--webhook-port',
      '0',
      '--health-port',
      '0',
      '--cert-extra-sans',
      '127.0.0.1',
      ...extraArgs,
    ];
    const exit = runOperator(args, io, {
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      signal: controller.signal,
      onStarted: (op) => (started = op),
      config: {
        host: '127.0.0.1',
        podNamespace: 'kubemod-system',
        shutdownDelayMs: 300,
      },
    });
    await eventually(() => started !== null, 15_000);
    return {
      operator: started!,
      stop: async () => {
        controller.abort();
        return exit;
      },
    };
  }

  it('serves rules from the cluster, writes status, annotates bound pods, and exits 0 when stopped', async () => {
    api.put('modrules', labelRule('default', 'label-deployments'));
    api.put('namespaces', loadFixture('namespace'));
    const { operator, stop } = await start();
    try {
      await eventually(() => operator.isReady());
      const ready = await send(`${operator.webhook.healthUrl}/readyz`);
      expect(ready.status).toBe(200);
      const ca = operator.caBundle()!;
      expect(ca).toContain('BEGIN CERTIFICATE');

      const deployment = loadFixture('deployment');
      (deployment.metadata as JsonObject).namespace = 'default';
      const { review } = await postReview(
        operator.webhook.url,
        '/dragnet-webhook',
        makeReview('CREATE', deployment),
        ca,
      );
      expect(review.response?.allowed).toBe(true);
      expect(decodePatch(review)).toContainEqual(
        expect.objectContaining({ path: '/metadata/labels/patched', value: 'yes' }),
      );

      // An invalid rule arriving later is skipped and reported on the rule.
      api.put('modrules', brokenRule('default', 'broken'));
      await eventually(() => {
        const conditions = ((api.get('modrules', 'default', 'broken')?.status as JsonObject | undefined)
          ?.conditions ?? []) as JsonObject[];
        return conditions[0]?.status === 'False';
      });
      expect(
        operator.store
          .snapshot()
          .rulesFor('default')
          .map((r) => r.name),
      ).toEqual(['label-deployments']);

      // pods/binding -> ref.kubemod.io/node on the pod; a dry-run binding changes nothing.
      const pod = loadFixture('pod');
      const podMeta = pod.metadata as JsonObject;
      delete podMeta.resourceVersion;
      api.put('pods', pod);
      const binding = (node: string, dryRun: boolean) => {
        const review = makeReview(
          'CREATE',
          {
            apiVersion: 'v1',
            kind: 'Binding',
            metadata: { name: podMeta.name, namespace: podMeta.namespace },
            target: { apiVersion: 'v1', kind: 'Node', name: node },
          },
          null,
          { dryRun },
        );
        review.request.resource = { group: '', version: 'v1', resource: 'pods' };
        review.request.subResource = 'binding';
        return review;
      };
      const dry = await postReview(
        operator.webhook.url,
        '/podbinding-webhook',
        binding('worker-dry', true),
        ca,
      );
      expect(dry.review.response?.allowed).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
      expect(api.requestsTo('PATCH', /\/pods\//)).toHaveLength(0);
      const bound = await postReview(
        operator.webhook.url,
        '/podbinding-webhook',
        binding('worker-9', false),
        ca,
      );
      expect(bound.review.response?.allowed).toBe(true);
      await eventually(() => {
        const annotations = (
          api.get('pods', String(podMeta.namespace), String(podMeta.name))?.metadata as JsonObject
        ).annotations as JsonObject;
        return annotations['ref.kubemod.io/node'] === 'worker-9';
      });

      const metrics = (await send(`${operator.webhook.healthUrl}/metrics`)).body;
      expect(metrics).toMatch(/^modrule_informer_synced\{resource="modrules"\} 1$/m);
      expect(metrics).toMatch(/^modrule_informer_lists\{resource="nodes"\} 1$/m);
      expect(metrics).toMatch(/^modrule_status_writes_total\{result="ok"\} [1-9]/m);
      expect(metrics).toMatch(/^modrule_pod_bindings_total\{result="annotated"\} 1$/m);
      const expiry = Number(
        /^modrule_webhook_certificate_expiry_timestamp_seconds (\d+)$/m.exec(metrics)?.[1],
      );
      expect(expiry * 1000 - Date.now()).toBeGreaterThan(360 * 24 * 3600 * 1000);
    } finally {
      await expect(stop()).resolves.toBe(0);
    }
    await expect(send(`${operator.webhook.healthUrl}/healthz`)).rejects.toThrow();
  });

  it("puts a Warning Event on a demoted namespace's rules that exhausted the request budget", async () => {
    // Fourteen rules of ~750 steps: each within its share (1,000 of the 10,000), too much together.
    for (const rule of moderateRules('evil', 14, 600)) api.put('modrules', rule);
    api.put('modrules', labelRule('evil', 'cheap'));
    const { operator, stop } = await start(['--request-budget-steps', '10000']);
    try {
      await eventually(() => operator.isReady());
      const configMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'c', namespace: 'evil' },
        data: { a: 'b' },
      };
      const { review } = await postReview(
        operator.webhook.url,
        '/dragnet-webhook',
        makeReview('CREATE', configMap),
        operator.caBundle()!,
      );
      expect(review.response?.allowed).toBe(true);
      expect(review.response?.warnings?.join()).toMatch(
        /evil\/moderate-\d+ failed: request budget exhausted/,
      );
      await eventually(() => api.list('events').filter((e) => e.reason === 'NamespaceDemoted').length === 14);
      const events = api.list('events').filter((e) => e.reason === 'NamespaceDemoted');
      // Only the rules that ran are named, not the namespace's other rules.
      expect(events.map((e) => (e.involvedObject as JsonObject).name).sort()).toEqual(
        Array.from({ length: 14 }, (_, i) => `moderate-${String(i).padStart(2, '0')}`),
      );
      expect(events[0]).toMatchObject({
        type: 'Warning',
        involvedObject: { kind: 'ModRule', namespace: 'evil' },
        message: expect.stringContaining('budget exhausted'),
      });
    } finally {
      await stop();
    }
  });

  it('is not ready (503) while the API server has not answered the lists yet', async () => {
    let listing = false;
    api.interceptor = (r) => (!listing && r.path === '/api/v1/nodes' ? { status: 503 } : undefined);
    const { operator, stop } = await start();
    try {
      expect((await send(`${operator.webhook.healthUrl}/readyz`)).status).toBe(503);
      listing = true;
      await eventually(() => operator.isReady(), 10_000);
      expect((await send(`${operator.webhook.healthUrl}/readyz`)).status).toBe(200);
    } finally {
      await stop();
    }
  });

  it('holds dragnet requests until the first sync instead of answering from an empty store', async () => {
    api.put('modrules', labelRule('default', 'label-deployments'));
    let listing = false;
    api.interceptor = (r) =>
      !listing && r.path === '/apis/api.kubemod.io/v1beta1/modrules' ? { status: 503 } : undefined;
    const { operator, stop } = await start();
    try {
      const ca = operator.caBundle()!;
      const deployment = loadFixture('deployment');
      (deployment.metadata as JsonObject).namespace = 'default';
      const sent = Date.now();
      const pending = postReview(
        operator.webhook.url,
        '/dragnet-webhook?timeout=10s',
        makeReview('CREATE', deployment),
        ca,
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(operator.isReady()).toBe(false);
      listing = true;
      const { review } = await pending;
      expect(operator.isReady()).toBe(true);
      expect(Date.now() - sent).toBeGreaterThanOrEqual(300);
      expect(decodePatch(review)).toContainEqual(
        expect.objectContaining({ path: '/metadata/labels/patched', value: 'yes' }),
      );
    } finally {
      await stop();
    }
  });

  it("answers 503 when the rules are still not loaded near the API server's timeout, so failurePolicy decides", async () => {
    api.interceptor = (r) => (r.path === '/api/v1/namespaces' ? { status: 503 } : undefined);
    const { operator, stop } = await start();
    try {
      const sent = Date.now();
      const res = await send(`${operator.webhook.url}/dragnet-webhook?timeout=2s`, {
        body: JSON.stringify(makeReview('CREATE', loadFixture('deployment'))),
        headers: { 'Content-Type': 'application/json' },
        ca: operator.caBundle()!,
      });
      expect(res.status).toBe(503);
      expect(res.body).toContain('rules not loaded yet');
      // Held for the 2 s timeout less a second in hand.
      expect(Date.now() - sent).toBeGreaterThanOrEqual(950);
      expect(Date.now() - sent).toBeLessThan(1900);
      // The ModRule webhooks do not need the store and answer at once.
      const validated = await postReview(
        operator.webhook.url,
        '/validate-api-kubemod-io-v1beta1-modrule?timeout=2s',
        makeReview('CREATE', labelRule('default', 'x')),
        operator.caBundle()!,
      );
      expect(validated.review.response?.allowed).toBe(true);
    } finally {
      await stop();
    }
  });

  it('finishes a request that is in flight when it is told to stop', async () => {
    const { operator, stop } = await start();
    await eventually(() => operator.isReady());
    const ca = operator.caBundle()!;
    const body = Buffer.from(JSON.stringify(makeReview('CREATE', loadFixture('service'))));
    // Send half the body, ask the operator to stop, then send the rest: the answer must still arrive.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const response = (async () => {
      const { request } = await import('node:https');
      return new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${operator.webhook.url}/dragnet-webhook`, {
          method: 'POST',
          ca,
          agent: false,
          headers: { 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
        });
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on('error', reject);
        req.write(body.subarray(0, 100));
        void gate.then(() => req.end(body.subarray(100)));
      });
    })();
    await new Promise((r) => setTimeout(r, 100));
    const exit = stop();
    await new Promise((r) => setTimeout(r, 100));
    // Draining: still serving, but telling the kubelet to take this replica out of the Service.
    expect((await send(`${operator.webhook.healthUrl}/readyz`)).status).toBe(503);
    release();
    const answered = await response;
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body)).toMatchObject({ response: { allowed: true } });
    await expect(exit).resolves.toBe(0);
  });
});
