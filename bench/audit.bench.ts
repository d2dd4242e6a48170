import { ChildProcess, fork } from 'node:child_process';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { JsonObject } from '../util/json';
import { load, Point } from './load';
import { DEFAULT_SHARE } from '../operator/audit/background';
import { BenchRow } from './types';
import { APP_NAMESPACE, realisticDeployment, realisticReview } from './workloads';

/** Workloads of this suite: `npm run bench -- --only audit`. */
export const workloads = ['audit'];

const SECONDS = Number(process.env.MODRULE_BENCH_SECONDS ?? 5);
const MiB = 1024 * 1024;
const TARGETS = { p99Factor: 2, p99SlackMs: 5, scanRssMiB: 200, loopDelayP99Ms: 10 };

/**
 * Just enough of an API server for a background audit: discovery, Namespaces, `count` copies of the realistic
 * Deployment in the app namespace (paginated, generated page by page), and report writes (kept, not checked).
 */
function startListServer(count: number): Promise<{ url: string; close(): void }> {
  const template = realisticDeployment(APP_NAMESPACE);
  delete template.apiVersion;
  delete template.kind;
  const meta = template.metadata as JsonObject;
  meta.name = 'web-@N@';
  meta.uid = 'uid-@N@';
  meta.resourceVersion = '1';
  const parts = JSON.stringify(template).split('@N@');
  const item = (i: number) => parts.join(String(i));
  const list = (items: string[], next?: string) =>
    `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"${next ? `,"continue":"${next}"` : ''}},"items":[${items.join(',')}]}`;
  const discovery: Record<string, unknown> = {
    '/api/v1': { resources: [{ name: 'namespaces', kind: 'Namespace', namespaced: false, verbs: ['list'] }] },
    '/apis': {
      groups: [
        { name: 'apps', preferredVersion: { version: 'v1' } },
        { name: 'openreports.io', preferredVersion: { version: 'v1alpha1' } },
      ],
    },
    '/apis/apps/v1': {
      resources: [{ name: 'deployments', kind: 'Deployment', namespaced: true, verbs: ['list'] }],
    },
    '/apis/openreports.io/v1alpha1': {
      resources: [
        { name: 'reports', kind: 'Report', namespaced: true, verbs: ['list', 'create'] },
        { name: 'clusterreports', kind: 'ClusterReport', namespaced: false, verbs: ['list', 'create'] },
      ],
    },
    '/api/v1/namespaces': {
      items: [
        { metadata: { name: APP_NAMESPACE } },
        { metadata: { name: 'kubemod-system', labels: { 'admission.kubemod.io/ignore': 'true' } } },
      ],
    },
    '/apis/openreports.io/v1alpha1/reports': { items: [] },
    '/apis/openreports.io/v1alpha1/clusterreports': { items: [] },
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(body);
    };
    req.resume();
    if (req.method !== 'GET') return req.on('end', () => send(201, '{}'));
    if (/^\/apis\/apps\/v1\/namespaces\/[^/]+\/deployments$/.test(url.pathname)) {
      if (!url.pathname.includes(`/${APP_NAMESPACE}/`)) return send(200, list([]));
      const limit = Number(url.searchParams.get('limit') ?? count);
      const start = Number(url.searchParams.get('continue') ?? 0);
      const end = Math.min(count, start + limit);
      const items = Array.from({ length: end - start }, (_, k) => item(start + k));
      return send(200, list(items, end < count ? String(end) : undefined));
    }
    const body = discovery[url.pathname];
    if (body) return send(200, JSON.stringify(body));
    send(404, '{"kind":"Status","code":404,"reason":"NotFound","message":"not found"}');
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => server.close(),
      }),
    ),
  );
}

interface Round {
  ms: number;
  listed: number;
  partial?: string;
  /** Event-loop delay while the scan ran (ms): how long an admission arriving meanwhile could wait. */
  delay: { p50: number; p99: number; max: number };
}
interface Memory {
  rss: number;
  heapUsed: number;
  after: NodeJS.MemoryUsage;
}

/** The webhook and the background audit in their own process (bench/audit-child). */
function startChild(
  apiServer: string,
  share?: number,
): Promise<{
  url: string;
  scan(): Promise<Round>;
  idle(ms: number): Promise<Round['delay']>;
  memory(): Promise<Memory>;
  stop(): Promise<void>;
}> {
  const child: ChildProcess = fork(join(__dirname, 'audit-child.js'), [], {
    env: { ...process.env, API_SERVER: apiServer, ...(share ? { AUDIT_SHARE: String(share) } : {}) },
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const next = <T>(key: string) =>
    new Promise<T>((resolve) => {
      const on = (m: Record<string, unknown>) => {
        if (key in m) {
          child.off('message', on);
          resolve(m[key] as T);
        }
      };
      child.on('message', on);
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`audit child exited with ${code}`)));
    child.once('message', (m: { url?: string; error?: string }) => {
      if (!m.url) return reject(new Error(`audit child failed: ${m.error}`));
      resolve({
        url: m.url,
        scan: () => {
          const done = next<Round>('round');
          child.send('scan');
          return done;
        },
        idle: (ms: number) => {
          const done = next<Round['delay']>('idle');
          child.send({ idleMs: ms });
          return done;
        },
        memory: () => {
          const done = next<Memory>('memory');
          child.send('memory');
          return done;
        },
        stop: () =>
          new Promise((done) => {
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.send('stop');
          }),
      });
    });
  });
}

const ms = (p: Point) => `p50 ${p.p50} ms, p99 ${p.p99} ms, max ${p.max} ms, ${p.bad} bad`;
const mib = (n: number) => `${(n / MiB).toFixed(0)} MiB`;

/** Dragnet latency while a background scan of 10,000 Deployments runs in the same process; memory at 100,000. */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const row = (c: string, opsPerSec: number | null, notes: string, target?: string, pass?: boolean) =>
    rows.push({ suite: 'audit', case: c, opsPerSec, notes, target, pass });
  const body = realisticReview();
  for (const count of [10_000, 100_000]) {
    const api = await startListServer(count);
    // The memory row takes the whole process (share 1) to finish sooner; memory does not depend on the pace.
    const child = await startChild(api.url, count === 10_000 ? undefined : 1);
    try {
      if (count === 10_000) {
        await child.scan(); // warm-up: the JIT, and the API server's page cache in a real cluster
        const scan = await child.scan();
        row(
          `scan of ${count.toLocaleString('en-US')} Deployments (150 rules in scope, 15 match)`,
          (scan.listed / scan.ms) * 1000,
          `${scan.ms} ms for ${scan.listed} objects: the operator's defaults (pages of 50, 1 ms slices, ` +
            `share ${DEFAULT_SHARE})` +
            (scan.partial ? `; partial: ${scan.partial}` : ''),
        );
        const delay = (d: Round['delay']) =>
          `p50 ${d.p50.toFixed(1)} ms, p99 ${d.p99.toFixed(1)} ms, max ${d.max.toFixed(1)} ms`;
        const quiet = await child.idle(scan.ms);
        row('event-loop delay, no scan (as long as the scan)', null, delay(quiet));
        row(
          'event-loop delay during that scan (no load)',
          null,
          `${delay(scan.delay)}: what an admission arriving meanwhile waits before it is handled`,
          `p99 <= ${TARGETS.loopDelayP99Ms} ms`,
          scan.delay.p99 <= TARGETS.loopDelayP99Ms,
        );
        // The webhook's capacity here, then a steady 40% of it: a webhook is not run saturated.
        const saturated = await load(child.url, body, 8, SECONDS);
        const rate = Math.max(10, Math.round(saturated.rps * 0.4));
        // Scans back to back for as long as the load runs.
        const during = async (measure: () => Promise<Point>) => {
          let scanning = true;
          let scans = 0;
          const loop = (async () => {
            while (scanning) {
              await child.scan();
              scans++;
            }
          })();
          const point = await measure();
          scanning = false;
          await loop;
          return { point, scans };
        };
        // Interleaved twice (the machine is shared): the better of each is compared.
        const steady = () => load(child.url, body, 8, SECONDS, { rate });
        const idles: Point[] = [];
        const busies: Array<{ point: Point; scans: number }> = [];
        for (let k = 0; k < 2; k++) {
          idles.push(await steady());
          busies.push(await during(steady));
        }
        const idle = idles.reduce((a, b) => (b.p99 < a.p99 ? b : a));
        const busy = busies.reduce((a, b) => (b.point.p99 < a.point.p99 ? b : a));
        const full = await during(() => load(child.url, body, 8, SECONDS));
        const limit = Math.max(idle.p99 * TARGETS.p99Factor, idle.p99 + TARGETS.p99SlackMs);
        row(
          `dragnet at ${rate}/s (40% of capacity), no scan`,
          idle.rps,
          `${ms(idle)} (p99 of both runs: ${idles.map((p) => p.p99).join(', ')} ms)`,
        );
        row(
          `dragnet at ${rate}/s during scans`,
          busy.point.rps,
          `${ms(busy.point)} (p99 of both runs: ${busies.map((b) => b.point.p99).join(', ')} ms); ` +
            `${busy.scans} scan(s) of ${count.toLocaleString('en-US')} objects meanwhile`,
          `p99 <= max(${TARGETS.p99Factor}x, +${TARGETS.p99SlackMs} ms)`,
          busy.point.p99 <= limit,
        );
        row('dragnet saturated (c=8), no scan', saturated.rps, ms(saturated));
        row(
          'dragnet saturated (c=8) during scans',
          full.point.rps,
          `${ms(full.point)}; ${(full.point.rps / saturated.rps).toFixed(2)}x the throughput without ` +
            `(the scan's slices take at most ${DEFAULT_SHARE} of the process)`,
        );
      } else {
        const before = await child.memory();
        const scan = await child.scan();
        const mem = await child.memory();
        row(
          `scan of ${count.toLocaleString('en-US')} Deployments: memory`,
          (scan.listed / scan.ms) * 1000,
          `peak RSS ${mib(mem.rss)} (${mib(before.after.rss)} before), peak heap ${mib(mem.heapUsed)}; ` +
            `${scan.ms} ms${scan.partial ? `; partial: ${scan.partial}` : ''}`,
          `peak RSS < ${TARGETS.scanRssMiB} MiB`,
          mem.rss < TARGETS.scanRssMiB * MiB,
        );
      }
    } finally {
      await child.stop();
      api.close();
    }
  }
  return rows;
}
