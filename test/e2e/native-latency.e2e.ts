import { performance } from 'node:perf_hooks';

import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { KubeClient } from '../../kube/kube';
import { RunningOperator } from '../../operator/start';
import { SERVE_ANNOTATION } from '../../native';

import { apply, waitFor } from './cluster';
import { metricSum, webhookCalls } from './metrics';
import { describeCluster, E2eCluster, startCluster } from './target';
import { labelRule, labelsOf, MODRULES, modRule, NS, SCOPE, servedNatively, setUp } from './native-setup';

/*
 * 1,000 ConfigMap creates through each path, on the real API server, interleaved in blocks of 100 in the order
 * A B C ... C B A so drift on a shared machine evens out: the same Patch rule served natively (objects without
 * kubectl's last-applied-configuration: the policy alone; with it: the policy, then the dragnet webhook keeps the
 * annotation in step) and by the webhook, a Reject rule both ways, and no rule. Measured on the API server (its
 * request and admission-step histograms) and at the client; per path the mean of all writes and the range of the
 * block means. Asserted: every write came back patched (or not), and the API server's own count of dragnet calls
 * per path (0 where no guard leaves the object to the webhook). The timing comparison is printed, never asserted.
 */

const WRITES = Number(process.env.NATIVE_LATENCY_WRITES || 1000);
const BLOCK = Math.max(1, Math.min(100, WRITES / 2));

type Scenario = 'native' | 'native-applied' | 'webhook' | 'native-reject' | 'webhook-reject' | 'none';
const SCENARIOS: readonly Scenario[] = [
  'native',
  'native-applied',
  'webhook',
  'native-reject',
  'webhook-reject',
  'none',
];
const NAMESPACES: Record<Scenario, string> = {
  native: NS,
  'native-applied': NS,
  webhook: `${NS}-web`,
  'native-reject': `${NS}-nrej`,
  'webhook-reject': `${NS}-wrej`,
  none: `${NS}-none`,
};
const PATCHES: Record<Scenario, boolean> = {
  native: true,
  'native-applied': true,
  webhook: true,
  'native-reject': false,
  'webhook-reject': false,
  none: false,
};
/** Dragnet calls each write must cost: only where the webhook serves a rule, or a guard leaves it there. */
const CALLS: Record<Scenario, number> = {
  native: 0,
  'native-applied': 1,
  webhook: 1,
  'native-reject': 0,
  'webhook-reject': 1,
  none: 0,
};

interface Totals {
  requestSeconds: number;
  requests: number;
  admitSeconds: number;
  admits: number;
  calls: number;
  client: number[];
  /** Per block: mean server request and mutating admission time (ms). */
  blocks: Array<{ request: number; admit: number }>;
}

const POST = ['verb="POST"', 'resource="configmaps"'];
const ADMIT = ['operation="CREATE"', 'type="admit"', 'rejected="false"'];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

describeCluster(`${WRITES} writes per path: native policy vs webhook vs no rule`, () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let operator: RunningOperator;
  const totals = Object.fromEntries(
    SCENARIOS.map((s): [Scenario, Totals] => [
      s,
      { requestSeconds: 0, requests: 0, admitSeconds: 0, admits: 0, calls: 0, client: [], blocks: [] },
    ]),
  ) as Record<Scenario, Totals>;

  beforeAll(async () => {
    cp = await startCluster();
    ({ admin, operator } = await setUp(cp, 'opt-in'));
    for (const ns of new Set(SCENARIOS.filter((s) => NAMESPACES[s] !== NS).map((s) => NAMESPACES[s])))
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
    // Each API server applies the registration from its own watch: a native write that skips the webhook shows it.
    await waitFor('the registration to leave native objects out', async () => {
      const before = webhookCalls((await cp.get('/metrics')).body, 'dragnet.kubemod.io');
      await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'warm-' }, data: { k: 'v' } },
      });
      return webhookCalls((await cp.get('/metrics')).body, 'dragnet.kubemod.io') === before;
    });
  }, 240_000);

  afterAll(async () => {
    await operator?.stop();
    await cp?.stop();
  });

  async function block(scenario: Scenario, count: number): Promise<void> {
    const before = (await cp.get('/metrics')).body;
    const t = totals[scenario];
    const path = `/api/v1/namespaces/${NAMESPACES[scenario]}/configmaps`;
    const annotations =
      scenario === 'native-applied' ? { [LAST_APPLIED_ANNOTATION]: '{"data":{"k":"v"}}\n' } : {};
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      const cm = await admin.request('POST', path, {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { generateName: 'lat-', annotations },
          data: { k: 'v' },
        },
      });
      t.client.push(performance.now() - started);
      const team = PATCHES[scenario] ? 'platform' : undefined;
      if (labelsOf(cm).team !== team)
        expect({ scenario, i, labels: labelsOf(cm) }).toEqual({ scenario, i, team });
    }
    const after = (await cp.get('/metrics')).body;
    const delta = (name: string, labels: readonly string[]) =>
      metricSum(after, name, labels) - metricSum(before, name, labels);
    const request = delta('apiserver_request_duration_seconds_sum', POST);
    const requests = delta('apiserver_request_duration_seconds_count', POST);
    const admit = delta('apiserver_admission_step_admission_duration_seconds_sum', ADMIT);
    const admits = delta('apiserver_admission_step_admission_duration_seconds_count', ADMIT);
    t.requestSeconds += request;
    t.requests += requests;
    t.admitSeconds += admit;
    t.admits += admits;
    t.calls += webhookCalls(after, 'dragnet.kubemod.io') - webhookCalls(before, 'dragnet.kubemod.io');
    t.blocks.push({ request: (request / requests) * 1000, admit: (admit / admits) * 1000 });
  }

  it('patches every write on every path; the API server calls the dragnet only where the webhook is needed', async () => {
    for (let done = 0; done < WRITES; done += 2 * BLOCK)
      for (const s of [...SCENARIOS, ...[...SCENARIOS].reverse()]) await block(s, BLOCK);
    const rows = SCENARIOS.map((s) => {
      const t = totals[s];
      return (
        `  ${s.padEnd(15)} server request ${((t.requestSeconds / t.requests) * 1000).toFixed(2)} ms ` +
        `(blocks ${range(t.blocks.map((b) => b.request))}), mutating admission ` +
        `${((t.admitSeconds / t.admits) * 1000).toFixed(2)} ms (blocks ${range(t.blocks.map((b) => b.admit))}); ` +
        `client p50 ${percentile(t.client, 50).toFixed(2)} ms, p99 ${percentile(t.client, 99).toFixed(2)} ms; ` +
        `dragnet calls ${t.calls}`
      );
    });
    process.stderr.write(
      `native latency (${WRITES} ConfigMap creates per path, mean per write):\n${rows.join('\n')}\n`,
    );
    for (const s of SCENARIOS) {
      expect(totals[s].client).toHaveLength(WRITES);
      expect([s, totals[s].calls]).toEqual([s, CALLS[s] * WRITES]);
    }
    const store = operator.store.nativeRules();
    expect(store.get(`${NS}/team`)).toEqual({ partial: true });
  }, 1_800_000);
});
