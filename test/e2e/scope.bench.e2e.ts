import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { readLive } from '../../scope/ownership';
import { dragnetOf, readScope } from '../../scope/entry';
import { apply, ClusterLedger, remove, waitFor, webhookManifests } from './cluster';
import { freePort } from './controlplane';
import { describeCluster, E2eCluster, startCluster } from './target';
import { installBundle } from './install';
import { metricSum, percentile, scrape, webhookCalls, writeConfigMaps } from './metrics';

/*
 * The number that matters to users (issue 18): what unrelated writes cost the API server with no webhook, with the
 * wide net (KubeMod's: every ConfigMap write calls the dragnet) and with the scoped net (the namespace's rules only
 * target Deployments: the API server never calls it). 1,000 ConfigMap creates per net, one at a time and 16 at a
 * time, twice each, against a real 1.37 kube-apiserver; the operator runs as its own process (`modrule operator`) so the load
 * generator does not share its event loop. Prints one table; asserts only the call counts (times are the machine's).
 * Run: KUBEBUILDER_ASSETS=/tmp/modrule-envtest-1.37/bin npx jest --config jest.e2e.config.js test/e2e/scope.bench
 */

const WRITES = Number(process.env.MODRULE_SCOPE_BENCH_WRITES ?? 1000);
const ROOT = join(__dirname, '..', '..');
const run = randomBytes(3).toString('hex');
const NS = `bench-${run}`;
const LABEL = `modrule-bench-${run}`;
const MUTATING = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Net = 'none' | 'wide' | 'scoped';

/** One measurement: WRITES creates at one concurrency. */
interface Sample {
  calls: number;
  perSecond: number;
  client: [number, number];
  /** API server: mean ms, and the p50/p99 bucket bounds of apiserver_request_duration_seconds (POST configmaps). */
  server: { mean: number; p50: string; p99: string };
  /** Mean time the API server spent in the dragnet call, per call (ms). */
  webhookMean: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The table: one row per net and concurrency, each the mean of its rounds. */
function table(samples: Map<string, Sample[]>): string {
  const header =
    '| net | concurrency | dragnet calls | writes/s | client p50 / p99 ms | API server mean ms | ' +
    'API server p50 / p99 ms (buckets, per round) | dragnet call mean ms |';
  const lines = [...samples].map(([key, runs]) => {
    const [net, concurrency] = key.split('|');
    const calls = runs.reduce((a, r) => a + r.calls, 0);
    const client = `${mean(runs.map((r) => r.client[0])).toFixed(1)} / ${mean(runs.map((r) => r.client[1])).toFixed(1)}`;
    const buckets = runs.map((r) => `${r.server.p50} / ${r.server.p99}`).join(', ');
    const hook = calls ? mean(runs.map((r) => r.webhookMean)).toFixed(2) : '-';
    return (
      `| ${net} | ${concurrency} | ${calls} | ${Math.round(mean(runs.map((r) => r.perSecond)))} | ${client} | ` +
      `${mean(runs.map((r) => r.server.mean)).toFixed(2)} | ${buckets} | ${hook} |`
    );
  });
  return `${header}\n|${'---|'.repeat(8)}\n${lines.join('\n')}\n`;
}

/** The upper bound (ms) of the histogram bucket holding the p-th percentile of the observations between two scrapes. */
function bucketPercentile(before: string, after: string, metric: string, match: string[], p: number): string {
  const buckets = new Map<string, number>();
  for (const text of [after, before])
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${metric}_bucket{`)) continue;
      const labels = line.slice(metric.length + 8, line.lastIndexOf('}')).split(',');
      if (!match.every((m) => labels.includes(m))) continue;
      const le = labels.find((l) => l.startsWith('le='))!.slice(4, -1);
      const v = Number(line.slice(line.lastIndexOf(' ') + 1));
      buckets.set(le, (buckets.get(le) ?? 0) + (text === after ? v : -v));
    }
  const sorted = [...buckets].sort((a, b) =>
    a[0] === '+Inf' ? 1 : b[0] === '+Inf' ? -1 : Number(a[0]) - Number(b[0]),
  );
  const total = sorted.at(-1)?.[1] ?? 0;
  const hit = sorted.find(([, count]) => count >= (p / 100) * total);
  return hit ? (hit[0] === '+Inf' ? '>max' : `<=${Number(hit[0]) * 1000}`) : '-';
}

describeCluster('API-server-side cost of unrelated writes: no webhook, wide net, scoped net', () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let port = 0;
  let child: ChildProcess | null = null;
  const samples = new Map<string, Sample[]>();

  async function operator(mode: 'wide' | 'rules'): Promise<void> {
    child = spawn(
      process.execPath,
      ['-r', join(ROOT, 'test', 'ts-register.js'), join(ROOT, 'cli', 'main.ts'), 'operator'],
      {
        env: {
          ...process.env,
          KUBECONFIG: cp.kubeConfigPath,
          POD_NAMESPACE: 'kubemod-system',
          MODRULE_WEBHOOK_PORT: String(port),
          MODRULE_HEALTH_PORT: '0',
          MODRULE_CERT_EXTRA_SANS: cp.webhookHost,
          MODRULE_DRAGNET_SCOPE: mode,
          MODRULE_LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    await waitFor(
      `the ${mode} registration with a caBundle`,
      async () => {
        const config = await admin.request('GET', `${MUTATING}/kubemod-mutating-webhook-configuration`);
        const dragnet = dragnetOf(config)!.webhook;
        const resources = readScope(dragnet).rules.flatMap((r) => r.resources);
        const ca = Boolean((dragnet.clientConfig as JsonObject).caBundle);
        // The wide net is the installed one (nothing to write); the scope is stamped as the operator's.
        if (mode === 'wide') return ca && resources.includes('configmaps');
        return ca && readLive(config, dragnet).ours && !resources.includes('configmaps');
      },
      60_000,
      100,
    );
    await sleep(1500); // every API server watch has the registration
  }

  async function stopOperator(): Promise<void> {
    if (!child) return;
    const c = child;
    child = null;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await gone;
  }

  async function measure(net: Net): Promise<void> {
    for (const concurrency of [1, 16]) {
      await writeConfigMaps(admin, NS, 20, concurrency); // warm connections and caches
      const before = await scrape(cp);
      const started = process.hrtime.bigint();
      const latencies = await writeConfigMaps(admin, NS, WRITES, concurrency);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const after = await scrape(cp);
      const match = ['verb="POST"', 'resource="configmaps"'];
      const sum = (t: string, m: string, l: string[]) => metricSum(t, m, l);
      const metric = 'apiserver_request_duration_seconds';
      const count = sum(after, `${metric}_count`, match) - sum(before, `${metric}_count`, match);
      const mean = (sum(after, `${metric}_sum`, match) - sum(before, `${metric}_sum`, match)) / count;
      const hook = 'apiserver_admission_webhook_admission_duration_seconds';
      const dragnet = ['name="dragnet.kubemod.io"'];
      const calls = webhookCalls(after, 'dragnet.kubemod.io') - webhookCalls(before, 'dragnet.kubemod.io');
      const hookSeconds = sum(after, `${hook}_sum`, dragnet) - sum(before, `${hook}_sum`, dragnet);
      const key = `${net}|${concurrency}`;
      if (!samples.has(key)) samples.set(key, []);
      samples.get(key)!.push({
        calls,
        perSecond: WRITES / seconds,
        client: [percentile(latencies, 50), percentile(latencies, 99)],
        server: {
          mean: mean * 1000,
          p50: bucketPercentile(before, after, metric, match, 50),
          p99: bucketPercentile(before, after, metric, match, 99),
        },
        webhookMean: calls > 0 ? (hookSeconds / calls) * 1000 : 0,
      });
      expect(calls).toBe(net === 'wide' ? WRITES : 0);
    }
  }

  beforeAll(async () => {
    cp = await startCluster();
    admin = createKubeClient(kubeConfigAccess(cp.kubeConfig()));
    port = await freePort();
    await installBundle(admin, new ClusterLedger(admin));
    await admin.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { [LABEL]: 'true' } } },
    });
  });

  afterAll(async () => {
    await stopOperator();
    await cp?.stop();
    process.stderr.write(
      `\n${WRITES} ConfigMap creates per row and round; rounds none, wide, scoped, scoped, wide, none ` +
        `(drift cancels out); API server 1.37.2, etcd on tmpfs:\n${table(samples)}`,
    );
  });

  test('no webhook, wide net, scoped net: one table', async () => {
    // The namespace's only rule targets Deployments: ConfigMaps are unrelated writes. (Stored before the ModRule
    // webhooks exist: they fail closed while no operator runs.)
    await apply(admin, `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`, {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'deployments', namespace: NS },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'Deployment' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
      },
    });
    const { mutating } = webhookManifests(`https://${cp.webhookHost}:${port}`, LABEL);
    await measure('none');
    await admin.request('POST', MUTATING, { body: mutating });
    await operator('wide');
    await measure('wide');
    await stopOperator();
    await operator('rules');
    await measure('scoped');
    await measure('scoped');
    await stopOperator();
    await operator('wide');
    await measure('wide');
    await stopOperator();
    await remove(admin, `${MUTATING}/kubemod-mutating-webhook-configuration`);
    await sleep(1500);
    await measure('none');
  }, 300_000);
});
