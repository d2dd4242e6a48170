import { Registry } from 'prom-client';
import { loadFixture } from '../fixtures/load';
import { RuleSnapshot, RuleStore } from '../store/rules';
import { AnswerMetrics } from './answer-metrics';
import { generateCertificates } from './certs';
import { RunningWebhook, WEBHOOK_PATHS } from './server';
import { makeReview, send, startTestServer } from './testing';

/** Every sample of a metric as `labels value` lines, from the Prometheus text a scrape returns. */
function samples(text: string, metric: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const at = line.lastIndexOf(' ');
    out[line.slice(metric.length, at)] = Number(line.slice(at + 1));
  }
  return out;
}

describe('AnswerMetrics', () => {
  it('has every fail-open series at 0 before anything happens, then counts by endpoint and reason', async () => {
    const registry = new Registry();
    const metrics = new AnswerMetrics(registry);
    const before = samples(await registry.metrics(), 'modrule_webhook_fail_open_total');
    expect(Object.keys(before)).toHaveLength(7);
    expect(Object.values(before).every((v) => v === 0)).toBe(true);
    metrics.failedOpen('dragnet', 'engine_error');
    metrics.failedOpen('dragnet', 'engine_error');
    const after = samples(await registry.metrics(), 'modrule_webhook_fail_open_total');
    expect(after['{endpoint="dragnet",reason="engine_error"}']).toBe(2);
    expect(after['{endpoint="dragnet",reason="rules_not_loaded"}']).toBe(0);
  });

  it("takes each endpoint's timeout from the ?timeout= of its calls, and ignores calls without one", async () => {
    const registry = new Registry();
    const metrics = new AnswerMetrics(registry);
    metrics.called('dragnet', '/dragnet-webhook?timeout=10s');
    metrics.called('validate-modrule', '/validate-api-kubemod-io-v1beta1-modrule?timeout=5s');
    metrics.called('podbinding', '/podbinding-webhook');
    metrics.called('mutate-modrule', '/mutate-api-kubemod-io-v1beta1-modrule?timeout=soon');
    let got = samples(await registry.metrics(), 'modrule_webhook_timeout_seconds');
    expect(got).toEqual({ '{endpoint="dragnet"}': 10, '{endpoint="validate-modrule"}': 5 });
    // The configuration changed: the next call says so.
    metrics.called('dragnet', '/dragnet-webhook?timeout=1m30s');
    got = samples(await registry.metrics(), 'modrule_webhook_timeout_seconds');
    expect(got['{endpoint="dragnet"}']).toBe(90);
  });
});

describe('fail-open answers of the webhook server', () => {
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  let server: RunningWebhook | null = null;

  afterEach(async () => {
    await server?.close();
    server = null;
  });

  async function start(store: RuleStore, rulesLoaded?: Promise<void>): Promise<RunningWebhook> {
    server = await startTestServer(store, certs, {
      rulesLoaded,
    });
    return server;
  }

  async function post(s: RunningWebhook, query: string) {
    return send(`${s.url}${WEBHOOK_PATHS.dragnet}${query}`, {
      body: JSON.stringify(makeReview('CREATE', loadFixture('deployment'))),
      headers: { 'Content-Type': 'application/json' },
      ca: certs.caCert,
    });
  }

  const failOpen = async (s: RunningWebhook) =>
    samples((await send(`${s.healthUrl}/metrics`)).body, 'modrule_webhook_fail_open_total');

  it('counts a request held past its timeout while the rules are not loaded (HTTP 503)', async () => {
    const s = await start(new RuleStore(), new Promise<void>(() => undefined));
    // The API server's timeout of 1 s leaves no time to hold: answered at once.
    const res = await post(s, '?timeout=1s');
    expect(res.status).toBe(503);
    const got = await failOpen(s);
    expect(got['{endpoint="dragnet",reason="rules_not_loaded"}']).toBe(1);
    expect(got['{endpoint="dragnet",reason="engine_error"}']).toBe(0);
    const text = (await send(`${s.healthUrl}/metrics`)).body;
    expect(samples(text, 'modrule_webhook_timeout_seconds')).toEqual({ '{endpoint="dragnet"}': 1 });
  });

  it('counts an evaluation that threw and was answered allowed, unchanged', async () => {
    // A store whose snapshot cannot be read: the engine throws on it, as it would on a bug of ours.
    const store = new RuleStore();
    const broken = store.snapshot();
    jest.spyOn(store, 'snapshot').mockReturnValue(
      Object.assign(Object.create(broken) as RuleSnapshot, {
        rulesFor: () => {
          throw new Error('store corrupted');
        },
      }),
    );
    const s = await start(store);
    const res = await post(s, '?timeout=10s');
    expect(res.status).toBe(200);
    const review = JSON.parse(res.body) as {
      response: { allowed: boolean; patch?: string; warnings: string[] };
    };
    expect(review.response.allowed).toBe(true);
    expect(review.response.patch).toBeUndefined();
    expect(review.response.warnings[0]).toMatch(/internal error, request allowed unchanged: store corrupted/);
    const got = await failOpen(s);
    expect(got['{endpoint="dragnet",reason="engine_error"}']).toBe(1);
    expect(got['{endpoint="dragnet",reason="rules_not_loaded"}']).toBe(0);
  });
});
