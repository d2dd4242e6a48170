import autocannon from 'autocannon';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { benignRule, bigConfigMap, hostileRules, smallConfigMap } from '../fixtures/hostile';
import { JsonObject } from '../util/json';
import { DEFAULT_BUDGET } from '../util/budget';
import { silentLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { generateCertificates } from '../webhook/certs';
import { startWebhookServer, WEBHOOK_PATHS } from '../webhook/server';
import { MemoryTlsSource } from '../webhook/tls';
import { load as loadFor, Point } from './load';
import { BenchRow } from './types';

// Issue 12: does one namespace's expensive rules slow down another's admissions? A benign namespace ("good": one
// cheap rule, small ConfigMaps) is loaded alone, then while a hostile namespace ("evil": 25 expensive but valid rules,
// a 600-key ConfigMap) is kept saturated. Loopback only; MODRULE_BENCH_SECONDS sets the seconds per run (default 10).
// MODRULE_BENCH_BUDGETS (e.g. "1000,100") runs the whole set once per request budget in ms (default: the default).
// "loop" is the server thread's event-loop delay (monitorEventLoopDelay, 1 ms resolution) during the run.
const SECONDS = Number(process.env.MODRULE_BENCH_SECONDS ?? 10);
// The API server gives up after the webhook's timeoutSeconds (10 in config/): later answers count as timeouts.
const load = (url: string, body: string, connections: number) =>
  loadFor(url, body, connections, SECONDS, { timeoutSeconds: 10 });
const BENIGN_CONNECTIONS = 4;
const HOSTILE_CONNECTIONS = 4;

interface WorkerInput {
  modruleIsolationBench: true;
  cert: string;
  key: string;
  budgetMs?: number;
}

/** Event-loop delay of the server thread over one run (ms). */
interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

async function serveInWorker(input: WorkerInput): Promise<void> {
  const store = new RuleStore();
  const rejected = store.replaceRules([...hostileRules('evil'), benignRule('evil'), benignRule('good')]);
  if (rejected.length > 0) throw new Error(`bench rules rejected: ${JSON.stringify(rejected)}`);
  const webhook = await startWebhookServer(
    {
      tls: new MemoryTlsSource({ cert: input.cert, key: input.key }),
      port: 0,
      host: '127.0.0.1',
      healthPort: 0,
      logger: silentLogger(),
      isReady: () => true,
    },
    {
      store,
      // Steps in proportion (~10 steps per µs of the most expensive work), so the time is what binds.
      budget: input.budgetMs ? { ms: input.budgetMs, steps: input.budgetMs * 10_000 } : undefined,
    },
  );
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  parentPort?.on('message', (m: string) => {
    if (m === 'stop') void webhook.close().then(() => process.exit(0));
    else if (m === 'reset') loop.reset();
    else if (m === 'loop') {
      const ms = (ns: number) => Math.round(ns / 1e5) / 10;
      const delay: LoopDelay = {
        p50: ms(loop.percentile(50)),
        p99: ms(loop.percentile(99)),
        max: ms(loop.max),
      };
      parentPort?.postMessage({ loop: delay });
    }
  });
  parentPort?.postMessage({ url: webhook.url + WEBHOOK_PATHS.dragnet });
}

if (!isMainThread && (workerData as WorkerInput | null)?.modruleIsolationBench) {
  void serveInWorker(workerData as WorkerInput);
}

interface BenchServer {
  url: string;
  /** Starts a new event-loop delay measurement. */
  reset: () => void;
  /** Event-loop delay since the last reset. */
  loop: () => Promise<LoopDelay>;
  stop: () => Promise<void>;
}

// The server runs in a worker thread so the load generators (this thread) do not share its event loop.
function startWorker(input: WorkerInput): Promise<BenchServer> {
  const worker = new Worker(__filename, { workerData: input });
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (m: { url: string }) =>
      resolve({
        url: m.url,
        reset: () => worker.postMessage('reset'),
        loop: () =>
          new Promise((done) => {
            worker.once('message', (r: { loop: LoopDelay }) => done(r.loop));
            worker.postMessage('loop');
          }),
        stop: () =>
          new Promise((done) => {
            worker.once('exit', () => done());
            worker.postMessage('stop');
          }),
      }),
    );
  });
}

/** A ConfigMap CREATE review as the API server sends it. */
export function review(object: JsonObject): string {
  const meta = object.metadata as JsonObject;
  const gvr = { group: '', version: 'v1', resource: 'configmaps' };
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '0d7f1e2c-5c43-4b52-9a37-0c7e6f1f2a10',
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      resource: gvr,
      requestKind: { group: '', version: 'v1', kind: 'ConfigMap' },
      requestResource: gvr,
      name: meta.name,
      namespace: meta.namespace,
      operation: 'CREATE',
      userInfo: { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
      object,
      oldObject: null,
      dryRun: false,
    },
  });
}

const ms = (p: Point) =>
  `p50 ${p.p50} ms, p99 ${p.p99} ms, max ${p.max} ms, ${p.requests} requests` +
  (p.bad ? `, ${p.bad} failed` : '');
const loopText = (l: LoopDelay) => `loop p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms`;

/** One hostile request on a fresh server (its namespace not yet demoted): how long it holds the event loop. */
async function coldHostile(url: string, body: string): Promise<number> {
  const r = await autocannon({
    url,
    method: 'POST',
    body,
    headers: { 'Content-Type': 'application/json' },
    connections: 1,
    amount: 1,
    timeout: 10,
  });
  return r.latency.max;
}

/** Benign p50/p99 alone and while a hostile namespace is saturated, and the hostile requests' own latency. */
export async function run(): Promise<BenchRow[]> {
  const budgets = (process.env.MODRULE_BENCH_BUDGETS ?? String(DEFAULT_BUDGET.ms)).split(',').map(Number);
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  const benign = review(smallConfigMap('good'));
  const hostile = review(bigConfigMap('evil'));
  const rows: BenchRow[] = [];
  for (const budgetMs of budgets) {
    const input: WorkerInput = { modruleIsolationBench: true, cert: certs.cert, key: certs.key, budgetMs };
    const tag = `budget ${budgetMs} ms`;
    // On its own server: the first hostile request demotes its namespace.
    const coldServer = await startWorker(input);
    const cold = await coldHostile(coldServer.url, hostile).finally(() => coldServer.stop());
    const server = await startWorker(input);
    try {
      server.reset();
      const alone = await load(server.url, benign, BENIGN_CONNECTIONS);
      const aloneLoop = await server.loop();
      server.reset();
      const [shared, evil] = await Promise.all([
        load(server.url, benign, BENIGN_CONNECTIONS),
        load(server.url, hostile, HOSTILE_CONNECTIONS),
      ]);
      const sharedLoop = await server.loop();
      rows.push(
        {
          suite: 'isolation',
          case: `${tag}: first hostile request (not yet demoted)`,
          opsPerSec: null,
          notes: `${cold} ms`,
        },
        {
          suite: 'isolation',
          case: `${tag}: benign ns alone c=${BENIGN_CONNECTIONS}`,
          opsPerSec: alone.rps,
          notes: `${ms(alone)}; ${loopText(aloneLoop)}`,
        },
        {
          suite: 'isolation',
          case: `${tag}: benign ns, hostile ns saturated c=${BENIGN_CONNECTIONS}+${HOSTILE_CONNECTIONS}`,
          opsPerSec: shared.rps,
          notes: `${ms(shared)}; p99 +${shared.p99 - alone.p99} ms over alone; ${loopText(sharedLoop)}`,
        },
        {
          suite: 'isolation',
          case: `${tag}: hostile ns requests c=${HOSTILE_CONNECTIONS}`,
          opsPerSec: evil.rps,
          notes: ms(evil),
        },
      );
    } finally {
      await server.stop();
    }
  }
  return rows;
}
