import { readFileSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { join } from 'node:path';
import { packageRoot } from '../cli/serve';
import { JsonObject } from '../util/json';
import { silentLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { generateCertificates } from '../webhook/certs';
import { listManifestFiles, loadManifestFile } from '../store/local/load';
import { startWebhookServer, WEBHOOK_PATHS } from '../webhook/server';
import { MemoryTlsSource } from '../webhook/tls';
import { load as loadFor, Point } from './load';
import { startFloor } from './server-child';
import { BenchRow } from './types';

// Loopback only. Each point runs this many seconds (MODRULE_BENCH_SECONDS overrides, e.g. 1 for a smoke run).
const SECONDS = Number(process.env.MODRULE_BENCH_SECONDS ?? 5);
const load = (url: string, body: string, connections: number) => loadFor(url, body, connections, SECONDS);
const CONNECTIONS = [1, 16, 64];
const NON_MATCHING_RULES = 100;

/** Rules that are evaluated for every Deployment in "default" but never match: the cost of a crowded namespace. */
function nonMatchingRules(): JsonObject[] {
  return Array.from({ length: NON_MATCHING_RULES }, (_, i) => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `unrelated-${i}`, namespace: i % 2 === 0 ? 'default' : 'kubemod-system' },
    spec: {
      type: i % 3 === 0 ? 'Reject' : 'Patch',
      ...(i % 2 === 0 ? {} : { targetNamespaceRegex: '.*' }),
      match: [
        { select: '$.kind', matchValue: 'Deployment' },
        { select: '$.metadata.labels.app', matchValue: `app-${i}` },
      ],
      ...(i % 3 === 0
        ? {}
        : { patch: [{ op: 'add', path: '/metadata/labels/unrelated', value: String(i) }] }),
    },
  }));
}

interface WorkerInput {
  modruleWebhookBench: 'dragnet' | 'floor';
  cert: string;
  key: string;
}

/** Starts one server inside this worker thread and reports its URL; stops on any message. */
async function serveInWorker(input: WorkerInput): Promise<void> {
  let url: string;
  let close: () => Promise<void>;
  if (input.modruleWebhookBench === 'floor') {
    const floor = await startFloor(input.cert, input.key);
    url = `https://127.0.0.1:${(floor.address() as AddressInfo).port}${WEBHOOK_PATHS.dragnet}`;
    close = () =>
      new Promise((resolve) => {
        floor.close(() => resolve());
        floor.closeAllConnections();
      });
  } else {
    const examples = join(packageRoot(), 'examples', 'local');
    const docs = (await Promise.all((await listManifestFiles([examples])).map(loadManifestFile))).flat();
    const store = new RuleStore();
    const rejected = store.replaceRules([...docs.filter((d) => d.kind === 'ModRule'), ...nonMatchingRules()]);
    if (rejected.length > 0) throw new Error(`bench rules rejected: ${JSON.stringify(rejected)}`);
    store.replaceNamespaces(docs.filter((d) => d.kind === 'Namespace'));
    store.replaceNodes(docs.filter((d) => d.kind === 'Node'));
    const webhook = await startWebhookServer(
      {
        tls: new MemoryTlsSource({ cert: input.cert, key: input.key }),
        port: 0,
        host: '127.0.0.1',
        healthPort: 0,
        logger: silentLogger(),
        isReady: () => true,
      },
      { store },
    );
    url = webhook.url + WEBHOOK_PATHS.dragnet;
    close = () => webhook.close();
  }
  parentPort?.once('message', () => void close().then(() => process.exit(0)));
  parentPort?.postMessage({ url });
}

// The servers run in worker threads so autocannon (on the main thread) does not share their event loop.
function startWorker(input: WorkerInput): Promise<{ url: string; stop: () => Promise<void> }> {
  const worker = new Worker(__filename, { workerData: input });
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (m: { url: string }) =>
      resolve({
        url: m.url,
        stop: () =>
          new Promise((done) => {
            worker.once('exit', () => done());
            worker.postMessage('stop');
          }),
      }),
    );
  });
}

if (!isMainThread && (workerData as WorkerInput | null)?.modruleWebhookBench) {
  void serveInWorker(workerData as WorkerInput);
}

/** Requests per second and latency of /dragnet-webhook next to a bare HTTPS floor, at 1, 16 and 64 connections. */
export async function run(): Promise<BenchRow[]> {
  const root = packageRoot();
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  const examples = join(root, 'examples', 'local');
  const ruleCount = (await Promise.all((await listManifestFiles([examples])).map(loadManifestFile)))
    .flat()
    .filter((d) => d.kind === 'ModRule').length;
  const webhook = await startWorker({ modruleWebhookBench: 'dragnet', cert: certs.cert, key: certs.key });
  const floor = await startWorker({ modruleWebhookBench: 'floor', cert: certs.cert, key: certs.key });
  const body = readFileSync(join(examples, 'reviews', 'deployment-create.json'), 'utf8');
  const rows: BenchRow[] = [];
  try {
    for (const c of CONNECTIONS) {
      const floorPoint = await load(floor.url, body, c);
      const point = await load(webhook.url, body, c);
      const ms = (p: Point) => `mean ${p.mean.toFixed(2)} ms, p50 ${p.p50} ms, p99 ${p.p99} ms`;
      rows.push({
        suite: 'webhook',
        case: `floor (parse + allowed) c=${c}`,
        opsPerSec: floorPoint.rps,
        notes: ms(floorPoint) + (floorPoint.bad ? `, ${floorPoint.bad} failed` : ''),
      });
      rows.push({
        suite: 'webhook',
        case: `dragnet Deployment CREATE c=${c}`,
        opsPerSec: point.rps,
        notes:
          `${ms(point)}, ${(point.rps / floorPoint.rps).toFixed(2)}x floor, ` +
          `${ruleCount + NON_MATCHING_RULES} rules` +
          (point.bad ? `, ${point.bad} failed` : ''),
      });
    }
  } finally {
    await webhook.stop();
    await floor.stop();
  }
  return rows;
}
