import { ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonObject } from '../util/json';
import { stringifyManifests } from '../util/yaml';
import { generateCertificates } from '../webhook/certs';
import { RuleStore } from '../store/rules';
import { handleDragnet } from '../webhook/dragnet';
import type { AdmitOptions } from '../engine/admit';
import { encodeReview, parseAdmissionReview } from '../webhook/review';
import { load as loadFor, Point } from './load';
import type { ChildMemory } from './server-child';
import { BenchRow, measure } from './types';
import {
  APP_NAMESPACE,
  copiesRules,
  crowdedRules,
  realisticReview,
  realisticRules,
  scalingRules,
  workloadNamespaces,
} from './workloads';
import { metadataOf } from '../util/meta';

/** Workloads this suite runs; `npm run bench -- --only realistic` picks some. */
export const workloads = ['realistic', 'crowded', 'copies', 'scaling'];

// Seconds per load point (MODRULE_BENCH_SECONDS overrides, e.g. 1 for a smoke run).
const SECONDS = Number(process.env.MODRULE_BENCH_SECONDS ?? 5);
const load = (url: string, body: string, connections: number, seconds = SECONDS) =>
  loadFor(url, body, connections, seconds);
const MiB = 1024 * 1024;

const TARGETS = {
  ratio64: 0.5,
  p99Factor: 3,
  admissionMicros: 40,
  crowdedThroughput: 0.9,
  crowdedRssMiB: 150,
  heapPerRuleKiB: 2,
  copiesPerRuleKiB: 0.5,
  scalingFactor: 1.3,
};

interface Child {
  url: string;
  memory(): Promise<ChildMemory>;
  stop(): Promise<void>;
}

/** Forks bench/server-child in MODE (with more environment variables) and waits for its URL. */
export function startChild(
  mode: string,
  arg = '',
  execArgv: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<Child> {
  const child: ChildProcess = fork(join(__dirname, 'server-child.js'), [mode, arg], {
    env: { ...process.env, ...env },
    execArgv: ['--expose-gc', ...execArgv],
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    child.once('message', (m: { url?: string; error?: string }) => {
      if (!m.url) return reject(new Error(`${mode} server failed: ${m.error}`));
      resolve({
        url: m.url,
        memory: () =>
          new Promise((done) => {
            child.once('message', (r: { memory: ChildMemory }) => done(r.memory));
            child.send('memory');
          }),
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.send('stop');
          }),
      });
    });
  });
}

/** Writes rules and namespaces as YAML files, one per namespace, as a GitOps repository would hold them. */
export function writeRuleFiles(rules: readonly JsonObject[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'modrule-bench-'));
  const byNamespace = new Map<string, JsonObject[]>();
  for (const r of rules) {
    const ns = String(metadataOf(r).namespace);
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), r]);
  }
  for (const [ns, list] of byNamespace) writeFileSync(join(dir, `${ns}.yaml`), stringifyManifests(list));
  writeFileSync(join(dir, 'namespaces.yaml'), stringifyManifests(workloadNamespaces()));
  return dir;
}

/** The list/watch server, and a pod's view of it: service env variables and a service-account folder. */
export interface ListWatchServer {
  url: string;
  /** KUBERNETES_SERVICE_HOST/PORT as a pod sees them. */
  serviceEnv: Record<string, string>;
  /** token and ca.crt, as mounted in a pod. */
  serviceAccountDir: string;
  close(): void;
}

/**
 * Just enough of an API server for the operator's informers: one-page lists, watches that stay open. HTTPS with its
 * own CA and a bearer token checked, so the operator child runs on the in-cluster credentials a pod uses.
 */
export function startListWatchServer(rules: readonly JsonObject[]): Promise<ListWatchServer> {
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  const token = 'bench-service-account-token';
  const serviceAccountDir = mkdtempSync(join(tmpdir(), 'modrule-bench-sa-'));
  writeFileSync(join(serviceAccountDir, 'token'), token);
  writeFileSync(join(serviceAccountDir, 'ca.crt'), certs.caCert);
  const withVersion = (list: readonly JsonObject[]) =>
    list.map((o, i) => ({
      ...o,
      metadata: { ...metadataOf(o), uid: `uid-${i}`, resourceVersion: '1' },
    }));
  const collections = new Map<string, string>([
    [
      '/apis/api.kubemod.io/v1beta1/modrules',
      JSON.stringify({ items: withVersion(rules), metadata: { resourceVersion: '1' } }),
    ],
    [
      '/api/v1/namespaces',
      JSON.stringify({ items: withVersion(workloadNamespaces()), metadata: { resourceVersion: '1' } }),
    ],
    ['/api/v1/nodes', JSON.stringify({ items: [], metadata: { resourceVersion: '1' } })],
  ]);
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = collections.get(url.pathname);
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end();
    } else if (!body) {
      res.writeHead(404).end();
    } else if (url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json' }); // stays open, no events
    } else {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
    }
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const port = String((server.address() as AddressInfo).port);
      resolve({
        url: `https://127.0.0.1:${port}`,
        serviceEnv: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        serviceAccountDir,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
          rmSync(serviceAccountDir, { recursive: true, force: true });
        },
      });
    }),
  );
}

/** A store with these rules and the workloads' Namespaces. */
export function storeWith(rules: readonly JsonObject[]): RuleStore {
  const store = new RuleStore();
  const rejected = store.replaceRules(rules);
  if (rejected.length > 0) throw new Error(`bench rules rejected: ${JSON.stringify(rejected[0])}`);
  store.replaceNamespaces(workloadNamespaces());
  return store;
}

/** CPU and wall microseconds per call of fn (CPU time: steadier than wall time on a shared machine). */
export function micros(fn: () => void): { cpu: number; wall: number } {
  const perSec = measure(fn, 300); // warms up and sizes the run
  const n = Math.max(200, Math.round(perSec * 0.7));
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e3 / n;
  const used = process.cpuUsage(cpu0);
  return { cpu: (used.user + used.system) / n, wall };
}

/** In process: parse the review, admit, encode the answer (no HTTP, no logging). */
function admissionMicros(
  store: RuleStore,
  body: string,
  options: AdmitOptions = {},
): { cpu: number; wall: number; matched: number; inScope: number } {
  const snapshot = store.snapshot();
  const sample = parseAdmissionReview(body);
  const decision = handleDragnet(sample.request, snapshot, undefined, options);
  if (decision.response.allowed !== true) throw new Error('bench request was not allowed');
  const t = micros(() => {
    const { apiVersion, request } = parseAdmissionReview(body);
    return encodeReview(apiVersion, handleDragnet(request, snapshot, undefined, options).response);
  });
  return {
    ...t,
    matched: decision.outcome?.matched.length ?? 0,
    inScope: snapshot.rulesFor(APP_NAMESPACE).length,
  };
}

/** The in-process floor: what the bare HTTPS floor does per request (parse, answer allowed). */
function floorMicros(body: string): { cpu: number; wall: number } {
  return micros(() => {
    const review = JSON.parse(body) as { apiVersion: string; request: { uid: string } };
    return JSON.stringify({
      apiVersion: review.apiVersion,
      kind: 'AdmissionReview',
      response: { uid: review.request.uid, allowed: true },
    });
  });
}

/**
 * Compiles the rules into `store` in a frame of its own: a value returned into an async function's frame (here the
 * raw ModRule objects, which no compiled rule holds) can stay reachable from its registers until the function
 * returns or awaits, and was counted as rule memory (~0.5 KiB per copies rule, by heap snapshot).
 */
function compileInto(store: RuleStore, make: () => JsonObject[]): number {
  const rejected = store.replaceRules(make());
  if (rejected.length > 0) throw new Error(`bench rules rejected: ${JSON.stringify(rejected[0])}`);
  return store.snapshot().ruleCount;
}

/** Heap held per compiled rule: GC, compile into a server's store, GC; the rule objects are dropped before measuring. */
async function heapPerRule(
  make: () => JsonObject[],
): Promise<{ perRule: number; total: number; count: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench does)');
  // A WeakRef keeps its target alive until the current job ends: without this turn of the event loop, the
  // interned parts of the rules an earlier row compiled survive the GC and are not counted here.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const before = process.memoryUsage().heapUsed;
  // Rules only: the Namespace manifests the other rows load are not part of a rule's cost. Compiled as the
  // servers hold them (without CompiledRule.source, which only the CLI keeps).
  let store: RuleStore | null = new RuleStore({ keepSource: false });
  const count = compileInto(store, make);
  // The same turn for the end: WeakRefs made while compiling keep their targets until the job ends.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const total = process.memoryUsage().heapUsed - before;
  store = null;
  return { perRule: total / count, total, count };
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const ms = (p: Point) => `p50 ${p.p50} ms, p99 ${p.p99} ms${p.bad ? `, ${p.bad} failed` : ''}`;

/** The dragnet workloads of issue 10: throughput next to the floor, in-process cost, memory per rule. */
export async function run(only: readonly string[] = []): Promise<BenchRow[]> {
  const want = (w: string) => only.length === 0 || only.includes(w) || only.includes('dragnet');
  const rows: BenchRow[] = [];
  const row = (c: string, opsPerSec: number | null, notes: string, target?: string, pass?: boolean) =>
    rows.push({ suite: 'dragnet', case: c, opsPerSec, notes, target, pass });
  const body = realisticReview();

  // In process first: quick, and the numbers decisions are made on.
  let realisticMicros = 0;
  const us = (t: { cpu: number; wall: number }) => `${t.cpu.toFixed(1)} us CPU (${t.wall.toFixed(1)} wall)`;
  const floor = want('realistic') || want('scaling') ? floorMicros(body) : undefined;
  if (floor) row('in-process floor (parse + allowed)', 1e6 / floor.cpu, `${us(floor)}/request`);
  if (want('realistic')) {
    const r = admissionMicros(storeWith(realisticRules()), body);
    realisticMicros = r.cpu;
    row(
      'realistic: in-process admission',
      1e6 / r.cpu,
      `${us(r)}/admission, ${floor ? (r.cpu / floor.cpu).toFixed(1) : '?'}x the in-process floor; ` +
        `${r.inScope} rules in scope, ${r.matched} match; ${body.length} B review`,
      `<= ${TARGETS.admissionMicros} us`,
      r.cpu <= TARGETS.admissionMicros,
    );
    // The opt-in record of the rules that patched the object (--record-patched-by): what it adds.
    const recorded = admissionMicros(storeWith(realisticRules()), body, { recordPatchedBy: true });
    row(
      'realistic: with --record-patched-by',
      1e6 / recorded.cpu,
      `${us(recorded)}/admission, ${(recorded.cpu / r.cpu).toFixed(2)}x without the record`,
    );
  }
  if (want('scaling')) {
    const base: number[] = [];
    for (const total of [15, 150, 1500]) {
      const r = admissionMicros(storeWith(scalingRules(total)), body);
      base.push(r.cpu);
      const factor = r.cpu / base[0];
      row(
        `scaling: ${total} rules in scope`,
        1e6 / r.cpu,
        `${us(r)}/admission, ${r.matched} match, ${factor.toFixed(2)}x the 15-rule cost`,
        total === 15 ? undefined : `<= ${TARGETS.scalingFactor}x 15-rule`,
        total === 15 ? undefined : factor <= TARGETS.scalingFactor,
      );
    }
  }
  if (want('crowded')) {
    const r = admissionMicros(storeWith(crowdedRules()), body);
    row(
      'crowded: in-process admission',
      1e6 / r.cpu,
      `${r.cpu.toFixed(1)} us CPU (${r.wall.toFixed(1)} wall)/admission; ${r.inScope} rules in scope, ${r.matched} match` +
        (realisticMicros ? `; ${(r.cpu / realisticMicros).toFixed(2)}x realistic` : ''),
    );
    const h = await heapPerRule(crowdedRules);
    row(
      'crowded: heap per compiled rule',
      null,
      `${kib(h.perRule)} per rule (${mib(h.total)} for ${h.count} rules with a matchRegex and a template)`,
      `<= ${TARGETS.heapPerRuleKiB} KiB`,
      h.perRule <= TARGETS.heapPerRuleKiB * 1024,
    );
  }
  if (want('copies')) {
    const h = await heapPerRule(copiesRules);
    row(
      'copies: heap per compiled rule',
      null,
      `${kib(h.perRule)} per rule (${mib(h.total)} for ${h.count} rules sharing select, regex and template text)`,
      `<= ${TARGETS.copiesPerRuleKiB} KiB`,
      h.perRule <= TARGETS.copiesPerRuleKiB * 1024,
    );
  }

  if (!want('realistic') && !want('crowded')) return rows;
  // Over HTTPS: every server in its own process, autocannon here.
  const dirs: string[] = [];
  const children: Child[] = [];
  const started = async (mode: string, arg?: string) => {
    const c = await startChild(mode, arg);
    children.push(c);
    return c;
  };
  try {
    const floor = await started('floor');
    let realistic64: Point | undefined;
    if (want('realistic')) {
      dirs.push(writeRuleFiles(realisticRules()));
      const server = await started('local', dirs[dirs.length - 1]);
      const floor1 = await load(floor.url, body, 1);
      const point1 = await load(server.url, body, 1);
      row('realistic: floor c=1', floor1.rps, ms(floor1));
      row(
        'realistic: dragnet c=1',
        point1.rps,
        `${ms(point1)}; ${(point1.rps / floor1.rps).toFixed(2)}x floor`,
      );
      const floor64 = await load(floor.url, body, 64);
      realistic64 = await load(server.url, body, 64);
      row('realistic: floor c=64', floor64.rps, ms(floor64));
      const ratio = realistic64.rps / floor64.rps;
      const p99 = realistic64.p99 / Math.max(floor64.p99, 1);
      row(
        'realistic: dragnet c=64',
        realistic64.rps,
        `${ms(realistic64)}; ${ratio.toFixed(2)}x floor, p99 ${p99.toFixed(1)}x floor's`,
        `>= ${TARGETS.ratio64}x floor, p99 <= ${TARGETS.p99Factor}x`,
        ratio >= TARGETS.ratio64 && p99 <= TARGETS.p99Factor,
      );
      await server.stop();
    }
    if (want('crowded')) {
      const rules = crowdedRules();
      dirs.push(writeRuleFiles(rules));
      const t0 = Date.now();
      const local = await started('local', dirs[dirs.length - 1]);
      const loadSeconds = (Date.now() - t0) / 1000;
      const idle = await local.memory();
      // The same sequence as the realistic row (c=1, then c=64), so both are measured with the JIT equally warm.
      const point1 = await load(local.url, body, 1);
      row('crowded: dragnet c=1 (serve --local)', point1.rps, ms(point1));
      const point = await load(local.url, body, 64);
      const floorAgain = await load(floor.url, body, 64);
      const mem = await local.memory();
      await local.stop();
      const ratio = point.rps / floorAgain.rps;
      const p99 = point.p99 / Math.max(floorAgain.p99, 1);
      const vsRealistic = realistic64 ? point.rps / realistic64.rps : NaN;
      row(
        'crowded: dragnet c=64 (serve --local)',
        point.rps,
        `${ms(point)}; ${ratio.toFixed(2)}x floor (${Math.round(floorAgain.rps)}/s), p99 ${p99.toFixed(1)}x floor's` +
          (realistic64 ? `, ${vsRealistic.toFixed(2)}x realistic` : ''),
        `p99 <= ${TARGETS.p99Factor}x` + (realistic64 ? `, >= ${TARGETS.crowdedThroughput}x realistic` : ''),
        p99 <= TARGETS.p99Factor && (!realistic64 || vsRealistic >= TARGETS.crowdedThroughput),
      );
      row(
        'crowded: RSS after load, serve --local',
        null,
        `${mib(mem.rss)} RSS (${mib(idle.rss)} before load, loaded in ${loadSeconds.toFixed(1)} s), heap ${mib(mem.heapUsed)}, ${rules.length} rules`,
        `< ${TARGETS.crowdedRssMiB} MiB`,
        mem.rss < TARGETS.crowdedRssMiB * MiB,
      );
      const api = await startListWatchServer(rules);
      try {
        const operator = await startChild('operator', api.serviceAccountDir, [], api.serviceEnv);
        children.push(operator);
        const idleOp = await operator.memory();
        const opPoint = await load(operator.url, body, 64, Math.max(1, SECONDS / 2));
        const memOp = await operator.memory();
        await operator.stop();
        row(
          'crowded: RSS after load, operator',
          null,
          `${mib(memOp.rss)} RSS (${mib(idleOp.rss)} before load), heap ${mib(memOp.heapUsed)}; ${Math.round(opPoint.rps)} req/s, ${ms(opPoint)}`,
          `< ${TARGETS.crowdedRssMiB} MiB`,
          memOp.rss < TARGETS.crowdedRssMiB * MiB,
        );
      } finally {
        api.close();
      }
    }
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  return rows;
}
