import { rmSync } from 'node:fs';
import { JsonObject } from '../util/json';
import { RuleStore } from '../store/rules';
import { handleDragnet } from '../webhook/dragnet';
import type { AdmitOptions } from '../engine/admit';
import { encodeReview, parseAdmissionReview } from '../webhook/review';
import { load as loadFor, Point } from './load';
import { Child, startChild, startListWatchServer, writeRuleFiles } from './children';
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

/** Which workloads to run, and where a row of the table goes. */
type Want = (workload: string) => boolean;
type AddRow = (c: string, opsPerSec: number | null, notes: string, target?: string, pass?: boolean) => void;

const us = (t: { cpu: number; wall: number }) => `${t.cpu.toFixed(1)} us CPU (${t.wall.toFixed(1)} wall)`;

/** The dragnet workloads of issue 10: throughput next to the floor, in-process cost, memory per rule. */
export async function run(only: readonly string[] = []): Promise<BenchRow[]> {
  const want: Want = (w) => only.length === 0 || only.includes(w) || only.includes('dragnet');
  const rows: BenchRow[] = [];
  const row: AddRow = (c, opsPerSec, notes, target, pass) =>
    rows.push({ suite: 'dragnet', case: c, opsPerSec, notes, target, pass });
  const body = realisticReview();
  // In process first: quick, and the numbers decisions are made on.
  await inProcess(want, body, row);
  if (want('realistic') || want('crowded')) await overHttps(want, body, row);
  return rows;
}

/** The in-process rows: admission cost of each workload, and the heap a compiled rule holds. */
async function inProcess(want: Want, body: string, row: AddRow): Promise<void> {
  let realisticMicros = 0;
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
  if (want('scaling')) scalingRows(body, row);
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
}

/** Admission cost with 15, 150 and 1500 rules in scope, against the 15-rule cost. */
function scalingRows(body: string, row: AddRow): void {
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

/** What the rows over HTTPS share: the floor server, the review, where rows go, how a server child is started. */
interface HttpsRun {
  floor: Child;
  body: string;
  row: AddRow;
  /** Forks a server child, stopped when the run ends. */
  started(mode: string, arg?: string, env?: Record<string, string>): Promise<Child>;
}

/** Over HTTPS: every server in its own process, autocannon here. */
async function overHttps(want: Want, body: string, row: AddRow): Promise<void> {
  const dirs: string[] = [];
  const children: Child[] = [];
  const started = async (mode: string, arg?: string, env?: Record<string, string>) => {
    const c = await startChild(mode, arg, [], env);
    children.push(c);
    return c;
  };
  try {
    const run: HttpsRun = { floor: await started('floor'), body, row, started };
    let realistic64: Point | undefined;
    if (want('realistic')) {
      dirs.push(writeRuleFiles(realisticRules()));
      realistic64 = await realisticOverHttps(run, dirs[dirs.length - 1]);
    }
    if (want('crowded')) {
      const rules = crowdedRules();
      dirs.push(writeRuleFiles(rules));
      await crowdedOverHttps(run, rules, dirs[dirs.length - 1], realistic64);
    }
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/** The realistic rules served by `serve --local` from `dir`, at 1 and 64 connections next to the floor; the c=64 point. */
async function realisticOverHttps({ floor, body, row, started }: HttpsRun, dir: string): Promise<Point> {
  const server = await started('local', dir);
  const floor1 = await load(floor.url, body, 1);
  const point1 = await load(server.url, body, 1);
  row('realistic: floor c=1', floor1.rps, ms(floor1));
  row('realistic: dragnet c=1', point1.rps, `${ms(point1)}; ${(point1.rps / floor1.rps).toFixed(2)}x floor`);
  const floor64 = await load(floor.url, body, 64);
  const realistic64 = await load(server.url, body, 64);
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
  return realistic64;
}

/** The crowded rules: `serve --local` from `dir` (throughput against the floor and realistic, RSS), then the operator. */
async function crowdedOverHttps(
  { floor, body, row, started }: HttpsRun,
  rules: JsonObject[],
  dir: string,
  realistic64: Point | undefined,
): Promise<void> {
  const t0 = Date.now();
  const local = await started('local', dir);
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
    const operator = await started('operator', api.serviceAccountDir, api.serviceEnv);
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
