import { connect, TLSSocket } from 'node:tls';
import { AdmissionReview } from './admission';
import { benignRule, bigConfigMap, deepObject, moderateRules, smallConfigMap } from '../fixtures/hostile';
import { RuleStore } from '../store/rules';
import { generateCertificates, GeneratedCertificates } from './certs';
import { NamespaceFairness } from './fairness';
import { HTTP_TIMEOUTS, NamespaceDemotion, RunningWebhook, WEBHOOK_PATHS } from './server';
import { decodePatch, makeReview, postReview, send, startTestServer } from './testing';

// Issue 12's budget, issue 24's shares: with a budget of 200,000 steps a rule's share is 20,000. Twelve rules of
// ~18,000 steps each fit their shares and exhaust the request together (what demotes a namespace).
const moderate = () => moderateRules('evil', 12, 18_000);

let certs: GeneratedCertificates;
beforeAll(() => {
  certs = generateCertificates({ hosts: ['127.0.0.1'] });
});

async function start(extra: Parameters<typeof startTestServer>[2] = {}): Promise<RunningWebhook> {
  const store = new RuleStore();
  expect(store.replaceRules([...moderate(), benignRule('evil'), benignRule('good')])).toEqual([]);
  return startTestServer(store, certs, {
    ...extra,
  });
}

async function metric(server: RunningWebhook, name: string): Promise<string[]> {
  const text = (await send(`${server.healthUrl}/metrics`)).body;
  return text.split('\n').filter((l) => l.startsWith(name));
}

describe('per-request budget over HTTP', () => {
  let server: RunningWebhook;
  beforeAll(async () => {
    // A budget small enough that the moderate rules run out of it, with demotion switched off (slowMs huge).
    server = await start({
      budget: { steps: 200_000, ms: 5_000 },
      fairness: { slowMs: 1e9, shareMsPerSecond: 1e9, demotionMs: 1 },
    });
  });
  afterAll(() => server.close());

  it('answers allowed, warns about the skipped rules, counts them and the exhausted request', async () => {
    const { review } = await postReview(
      server.url,
      WEBHOOK_PATHS.dragnet,
      makeReview('CREATE', bigConfigMap('evil')),
      certs.caCert,
    );
    const response = review.response!;
    expect(response.allowed).toBe(true);
    const warnings = response.warnings ?? [];
    expect(
      warnings.some((w) =>
        /^modrule evil\/moderate-\d+ failed: request budget exhausted: more than 200000/.test(w),
      ),
    ).toBe(true);
    const exhausted = await metric(server, 'modrule_request_budget_exhausted_total');
    expect(exhausted).toContain('modrule_request_budget_exhausted_total{namespace="evil"} 1');
    const errors = await metric(server, 'modrule_rule_errors_total{');
    // Every rule from the one that ran out on is counted as failed (13 rules in evil; at least the last ones).
    expect(
      errors.some((l) => l.startsWith('modrule_rule_errors_total{namespace="evil",name="moderate-11"} 1')),
    ).toBe(true);
  });

  it('an object nested 10,000 levels deep is answered with a warning, not a stack overflow', async () => {
    // JSON.stringify itself overflows at this depth: the nested data is spliced in as text.
    const shallow = { ...deepObject('good', 0), data: 'DEEP' };
    const body = JSON.stringify(makeReview('CREATE', shallow)).replace(
      '"DEEP"',
      '{"a":'.repeat(10_000) + '"x"' + '}'.repeat(10_000),
    );
    const raw = await send(server.url + WEBHOOK_PATHS.dragnet, {
      body,
      headers: { 'Content-Type': 'application/json' },
      ca: certs.caCert,
    });
    expect(raw.status).toBe(200);
    const review = JSON.parse(raw.body) as AdmissionReview;
    expect(review.response?.allowed).toBe(true);
    expect(review.response?.warnings).toEqual([
      'modrule good/benign failed: object nests deeper than 1000 levels; ModRules are not evaluated against it',
    ]);
  });

  it("another namespace's request is evaluated with its own budget", async () => {
    const { review } = await postReview(
      server.url,
      WEBHOOK_PATHS.dragnet,
      makeReview('CREATE', smallConfigMap('good')),
      certs.caCert,
    );
    expect(review.response?.warnings).toBeUndefined();
    expect(decodePatch(review)).toEqual([{ op: 'add', path: '/metadata/labels/team', value: 'good' }]);
  });
});

describe('Reject rules under the request budget over HTTP', () => {
  let server: RunningWebhook;
  beforeAll(async () => {
    const store = new RuleStore();
    const policy = {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'require-owner', namespace: 'kubemod-system' },
      spec: {
        type: 'Reject',
        targetNamespaceRegex: '.*',
        rejectMessage: 'no owner label',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.metadata.labels.owner', negate: true },
        ],
      },
    };
    expect(store.replaceRules([...moderate(), policy])).toEqual([]);
    server = await start({
      store,
      budget: { steps: 200_000, ms: 5_000 },
      fairness: { slowMs: 1e9, shareMsPerSecond: 1e9, demotionMs: 1 },
    });
  });
  afterAll(() => server.close());

  it("a tenant's costly Patch rules exhaust the budget, the cluster's Reject rule still rejects the object", async () => {
    const { review } = await postReview(
      server.url,
      WEBHOOK_PATHS.dragnet,
      makeReview('CREATE', bigConfigMap('evil')),
      certs.caCert,
    );
    expect(review.response?.allowed).toBe(false);
    expect(review.response?.status?.message).toBe(
      'operation rejected by the following ModRule(s): kubemod-system/require-owner: "no owner label"',
    );
    expect(review.response?.warnings?.[0]).toMatch(
      /^modrule evil\/moderate-\d+ failed: request budget exhausted: Patch rules used more than 150000 of 200000/,
    );
    expect(await metric(server, 'modrule_request_budget_exhausted_total')).toContain(
      'modrule_request_budget_exhausted_total{namespace="evil"} 1',
    );
  });
});

describe('demotion', () => {
  let server: RunningWebhook;
  beforeAll(async () => {
    // The demoted budget's time is generous here so that only steps decide (a loaded test machine can take 5 ms).
    server = await start({
      budget: { steps: 200_000, ms: 5_000 },
      fairness: { demotedBudget: { steps: 1_000, ms: 5_000 } },
    });
  });
  afterAll(() => server.close());

  it('a namespace that exhausts its budget is demoted: small budget, its cheap requests still patched', async () => {
    await postReview(
      server.url,
      WEBHOOK_PATHS.dragnet,
      makeReview('CREATE', bigConfigMap('evil')),
      certs.caCert,
    );
    expect(await metric(server, 'modrule_namespace_demotions_total')).toContain(
      'modrule_namespace_demotions_total{namespace="evil",reason="budget exhausted"} 1',
    );
    expect(await metric(server, 'modrule_demoted_namespaces')).toContain('modrule_demoted_namespaces 1');
    // Demoted: 1,000 steps, 400 a rule. The costly request fails sooner...
    const { review } = await postReview(
      server.url,
      WEBHOOK_PATHS.dragnet,
      makeReview('CREATE', bigConfigMap('evil')),
      certs.caCert,
    );
    // (two rules run out of their shares, 400 steps each, the next one of what the request has left)
    expect(review.response?.warnings?.slice(0, 3)).toEqual([
      "modrule evil/moderate-00 failed: rule budget exhausted: more than 400 evaluation steps (one rule's share)",
      "modrule evil/moderate-01 failed: rule budget exhausted: more than 400 evaluation steps (one rule's share)",
      'modrule evil/moderate-02 failed: request budget exhausted: more than 1000 evaluation steps',
    ]);
    // ...while a small object of the demoted namespace still gets its cheap rule.
    const small = await postReview(
      server.url,
      WEBHOOK_PATHS.dragnet,
      makeReview('CREATE', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'evil' } }),
      certs.caCert,
    );
    expect(small.review.response?.allowed).toBe(true);
    expect(small.review.response?.warnings).toBeUndefined();
  });
});

describe('onDemotion', () => {
  it("is called once per demotion with the namespace's own rules that ran, not the cluster's", async () => {
    const calls: NamespaceDemotion[] = [];
    const store = new RuleStore();
    const policy = {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'label-all', namespace: 'kubemod-system' },
      spec: {
        type: 'Patch',
        targetNamespaceRegex: '.*',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: '/metadata/labels/seen', value: 'yes' }],
      },
    };
    expect(store.replaceRules([...moderate(), policy])).toEqual([]);
    const server = await start({
      store,
      budget: { steps: 200_000, ms: 5_000 },
      onDemotion: (d) => calls.push(d),
    });
    try {
      for (let i = 0; i < 2; i++) {
        await postReview(
          server.url,
          WEBHOOK_PATHS.dragnet,
          makeReview('CREATE', bigConfigMap('evil')),
          certs.caCert,
        );
      }
      await new Promise((r) => setImmediate(r));
      expect(calls).toEqual([
        {
          namespace: 'evil',
          reason: 'budget exhausted',
          rules: moderate().map((r) => ({ namespace: 'evil', name: (r.metadata as { name: string }).name })),
        },
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('NamespaceFairness', () => {
  it('demotes on exhaustion, slow requests or too much time per second, and forgets after demotionMs', () => {
    let t = 0;
    const f = new NamespaceFairness({ slowMs: 25, shareMsPerSecond: 100, demotionMs: 60_000, now: () => t });
    expect(f.record('a', 10, false)).toBeNull();
    expect(f.record('a', 26, false)).toBe('slow request');
    expect(f.isDemoted('a')).toBe(true);
    expect(f.isDemoted('b')).toBe(false);
    expect(f.record('c', 1, true)).toBe('budget exhausted');
    for (let i = 0; i < 10; i++) expect(f.record('d', 10, false)).toBeNull();
    expect(f.record('d', 10, false)).toBe('too much evaluation time');
    // Many cheap requests (0.2 ms each, 300 ms in the second) are volume, not expensive rules: never demoted.
    for (let i = 0; i < 1500; i++) expect(f.record('busy', 0.2, false)).toBeNull();
    expect(f.isDemoted('busy')).toBe(false);
    // A new second starts a new window.
    t = 1_000;
    expect(f.record('e', 20, false)).toBeNull();
    t = 2_000;
    expect(f.record('e', 20, false)).toBeNull();
    expect(f.demotedCount()).toBe(3);
    t = 61_000;
    expect(f.isDemoted('a')).toBe(false);
    expect(f.demotedCount()).toBe(0);
  });

  it("a demoted namespace's evaluations wait: others' requests run first, one demoted evaluation per turn", async () => {
    const f = new NamespaceFairness({ demotionMs: 60_000 });
    f.record('evil', 0, true);
    const order: string[] = [];
    const runs = [
      f.run('evil', () => order.push('evil-1')),
      f.run('evil', () => order.push('evil-2')),
      f.run('good', () => order.push('good-1')),
    ];
    // Something arriving between two demoted evaluations (as a request read in between would).
    setImmediate(() => void f.run('good', () => order.push('good-2')));
    const [evil1] = await Promise.all(runs);
    expect(order).toEqual(['good-1', 'evil-1', 'good-2', 'evil-2']);
    expect(evil1.demoted).toBe(true);
    expect(evil1.budget.limits).toEqual({ steps: 50_000, ms: 5 });
    // Steps keep the budget's proportion to time, whatever the budget.
    expect(new NamespaceFairness({ budget: { steps: 10_000_000, ms: 1_000 } }).demotedBudget).toEqual({
      steps: 50_000,
      ms: 5,
    });
    expect(new NamespaceFairness({ budget: { steps: 1_000, ms: 2 } }).demotedBudget).toEqual({
      steps: 1_000,
      ms: 2,
    });
  });

  it('passes on what the evaluation throws', async () => {
    const f = new NamespaceFairness();
    await expect(
      f.run('x', () => {
        throw new Error('engine bug');
      }),
    ).rejects.toThrow('engine bug');
  });
});

// A client that opens a TLS connection and sends `head` (part of a request), then waits for the server to answer.
function slowClient(url: string, head: string): Promise<{ ms: number; answer: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: TLSSocket = connect({ host: u.hostname, port: Number(u.port), ca: certs.caCert }, () =>
      socket.write(head),
    );
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('utf8')));
    socket.on('close', () => resolve({ ms: Date.now() - started, answer }));
    socket.on('error', reject);
  });
}

describe('slow clients', () => {
  let server: RunningWebhook;
  beforeAll(async () => {
    server = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
  });
  afterAll(() => server.close());

  it('headers not complete within headersTimeout: 408 and closed on time', async () => {
    const { ms, answer } = await slowClient(server.url, 'POST /dragnet-webhook HTTP/1.1\r\nHost: x\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeGreaterThanOrEqual(290);
    // The checking interval is 1/30 of the headers timeout (at least 10 ms): never the 30 s default.
    expect(ms).toBeLessThan(300 + 250);
  });

  it('body not complete within requestTimeout: 408 and closed on time', async () => {
    const { ms, answer } = await slowClient(
      server.url,
      'POST /dragnet-webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeGreaterThanOrEqual(590);
    expect(ms).toBeLessThan(600 + 250);
  });

  it('the defaults are the documented 30 s and 60 s, checked every second', async () => {
    expect(server.httpTimeouts).toEqual({ headersMs: 300, requestMs: 600, checkingIntervalMs: 10 });
    const defaults = await start();
    try {
      expect(defaults.httpTimeouts).toEqual({
        headersMs: 30_000,
        requestMs: 60_000,
        checkingIntervalMs: 1_000,
      });
      expect(HTTP_TIMEOUTS).toMatchObject({ headersMs: 30_000, requestMs: 60_000 });
    } finally {
      await defaults.close();
    }
  });
});
