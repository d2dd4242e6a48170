import { performance } from 'node:perf_hooks';

import { KubeClient } from '../../operator/kube';
import { RunningOperator } from '../../operator/start';
import { SERVE_ANNOTATION } from '../../native';
import { apply, waitFor } from './cluster';
import { describeCluster, E2eCluster, startCluster } from './target';
import { labelRule, labelsOf, MODRULES, modRule, NS, SCOPE, servedNatively, setUp } from './native-setup';

/*
 * 1,000 writes through each path, on the real API server: the same Patch rule served by the dragnet webhook and by
 * its MutatingAdmissionPolicy, and no rule at all. Measured on the API server (its request and admission-step
 * histograms) and at the client, in blocks taken in the order A B C C B A so drift on a shared machine evens out.
 * Every write must come back patched (or not, without a rule): the numbers are of the paths doing their work.
 */

const WRITES = Number(process.env.NATIVE_LATENCY_WRITES || 1000);

// Patch: a label rule. Reject: a rule that rejects none of these writes. Served natively, both keep a residual rule
// (objects with last-applied-configuration, values of an unexpected shape), so the dragnet is still called for them:
// the native rows are the policy's cost on top of a webhook call that finds nothing to do.
type Scenario = 'native' | 'webhook' | 'native-reject' | 'webhook-reject' | 'none';
const SCENARIOS: readonly Scenario[] = ['native', 'webhook', 'native-reject', 'webhook-reject', 'none'];
const NAMESPACES: Record<Scenario, string> = {
  native: NS,
  webhook: `${NS}-web`,
  'native-reject': `${NS}-nrej`,
  'webhook-reject': `${NS}-wrej`,
  none: `${NS}-none`,
};
const PATCHES: Record<Scenario, boolean> = {
  native: true,
  webhook: true,
  'native-reject': false,
  'webhook-reject': false,
  none: false,
};

/** Sum of a metric's series whose labels include `labels` (Prometheus text format). */
export function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const series = line.slice(name.length + 1, close);
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`)))
      total += Number(line.slice(close + 1));
  }
  return total;
}

interface Totals {
  requestSeconds: number;
  requests: number;
  admitSeconds: number;
  admits: number;
  client: number[];
}

const POST = { verb: 'POST', resource: 'configmaps' };
const ADMIT = { operation: 'CREATE', type: 'admit', rejected: 'false' };

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

describeCluster(`${WRITES} writes: native policy vs webhook vs no rule`, () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let operator: RunningOperator;
  const totals = Object.fromEntries(
    SCENARIOS.map((s): [Scenario, Totals] => [
      s,
      { requestSeconds: 0, requests: 0, admitSeconds: 0, admits: 0, client: [] },
    ]),
  ) as Record<Scenario, Totals>;

  beforeAll(async () => {
    cp = await startCluster();
    ({ admin, operator } = await setUp(cp, 'opt-in'));
    for (const ns of SCENARIOS.filter((s) => s !== 'native').map((s) => NAMESPACES[s]))
      await admin.request('POST', '/api/v1/namespaces', {
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { [SCOPE]: 'true' } } },
      });
    await apply(admin, MODRULES(NAMESPACES.native), labelRule('team', 'team', 'platform'));
    await apply(admin, MODRULES(NAMESPACES.webhook), {
      ...labelRule('team', 'team', 'platform', false),
      metadata: { name: 'team', namespace: NAMESPACES.webhook },
    });
    const reject = (scenario: Scenario, native: boolean) => ({
      ...modRule(
        'no-forbidden',
        {
          type: 'Reject',
          match: [{ select: '$.kind', matchValue: 'ConfigMap' }, { select: '$.data.forbidden' }],
        },
        native,
      ),
      metadata: {
        name: 'no-forbidden',
        namespace: NAMESPACES[scenario],
        ...(native ? { annotations: { [SERVE_ANNOTATION]: 'true' } } : {}),
      },
    });
    await apply(admin, MODRULES(NAMESPACES['native-reject']), reject('native-reject', true));
    await apply(admin, MODRULES(NAMESPACES['webhook-reject']), reject('webhook-reject', false));
    await servedNatively(admin, 'team');
    await waitFor('no-forbidden to be served natively', async () =>
      operator.store.nativeRules().has(`${NAMESPACES['native-reject']}/no-forbidden`),
    );
  }, 180_000);

  afterAll(async () => {
    await operator?.stop();
    await cp?.stop();
  });

  async function block(scenario: Scenario, count: number): Promise<void> {
    const before = (await cp.get('/metrics')).body;
    const t = totals[scenario];
    const path = `/api/v1/namespaces/${NAMESPACES[scenario]}/configmaps`;
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      const cm = await admin.request('POST', path, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'lat-' }, data: { k: 'v' } },
      });
      t.client.push(performance.now() - started);
      expect(labelsOf(cm).team).toBe(PATCHES[scenario] ? 'platform' : undefined);
    }
    const after = (await cp.get('/metrics')).body;
    const delta = (name: string, labels: Record<string, string>) =>
      metricSum(after, name, labels) - metricSum(before, name, labels);
    t.requestSeconds += delta('apiserver_request_duration_seconds_sum', POST);
    t.requests += delta('apiserver_request_duration_seconds_count', POST);
    t.admitSeconds += delta('apiserver_admission_step_admission_duration_seconds_sum', ADMIT);
    t.admits += delta('apiserver_admission_step_admission_duration_seconds_count', ADMIT);
  }

  it('patches every write through both paths; prints the latencies', async () => {
    const half = WRITES / 2;
    for (const s of [...SCENARIOS, ...[...SCENARIOS].reverse()]) await block(s, half);
    const rows = SCENARIOS.map((s) => {
      const t = totals[s];
      return (
        `  ${s.padEnd(14)} server request ${((t.requestSeconds / t.requests) * 1000).toFixed(2)} ms, ` +
        `mutating admission ${((t.admitSeconds / t.admits) * 1000).toFixed(2)} ms; client p50 ` +
        `${percentile(t.client, 50).toFixed(2)} ms, p99 ${percentile(t.client, 99).toFixed(2)} ms`
      );
    });
    process.stderr.write(
      `native latency (${WRITES} ConfigMap creates each, mean per write):\n${rows.join('\n')}\n`,
    );
    for (const s of SCENARIOS) expect(totals[s].client).toHaveLength(WRITES);
    const store = operator.store.nativeRules();
    expect(store.get(`${NS}/team`)).toEqual({ partial: true });
    // Both keep a residual (a shape guard on what they read; last-applied-configuration): the dragnet is still called.
    expect(store.get(`${NAMESPACES['native-reject']}/no-forbidden`)).toEqual({ partial: true });
  }, 1_200_000);
});
