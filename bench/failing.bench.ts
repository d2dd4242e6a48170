import { rmSync } from 'node:fs';
import { JsonObject } from '../util/json';
import { handleDragnet } from '../webhook/dragnet';
import { encodeReview, parseAdmissionReview } from '../webhook/review';
import { RuleFailures } from '../webhook/rule-failures';
import { startChild, writeRuleFiles } from './children';
import { micros, storeWith } from './dragnet.bench';
import { load, Point } from './load';
import { BenchRow } from './types';
import { failingRules, realisticReview, realisticRules } from './workloads';

/** Workloads of this suite: `npm run bench -- --only failing`. */
export const workloads = ['failing'];

const FAILING = 2;
const SECONDS = Number(process.env.MODRULE_BENCH_SECONDS ?? 5);
const ms = (p: Point) => `p50 ${p.p50} ms, p99 ${p.p99} ms${p.bad ? `, ${p.bad} failed` : ''}`;

/** In process: parse, admit, record the failures as the server does, encode. */
function admissionMicros(
  rules: readonly JsonObject[],
  body: string,
): { cpu: number; wall: number; failed: number } {
  const snapshot = storeWith(rules).snapshot();
  const failures = new RuleFailures();
  const sample = handleDragnet(parseAdmissionReview(body).request, snapshot);
  const t = micros(() => {
    const { apiVersion, request } = parseAdmissionReview(body);
    const decision = handleDragnet(request, snapshot);
    const failed = decision.outcome?.failures;
    if (failed && failed.length > 0)
      failures.record(failed, () => `Deployment ${request.namespace}/${request.name}`);
    return encodeReview(apiVersion, decision.response);
  });
  return { ...t, failed: sample.outcome?.failures.length ?? 0 };
}

/**
 * The request path with rules that fail at run time: the realistic rules plus FAILING rules that match the
 * Deployment and divide by zero, next to the realistic rules alone, in process and over HTTPS (serve --local).
 */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const row = (c: string, opsPerSec: number | null, notes: string) =>
    rows.push({ suite: 'failing', case: c, opsPerSec, notes });
  const body = realisticReview();
  const rules = [...realisticRules(), ...failingRules(FAILING)];
  const us = (t: { cpu: number; wall: number }) => `${t.cpu.toFixed(1)} us CPU (${t.wall.toFixed(1)} wall)`;
  const base = admissionMicros(realisticRules(), body);
  const failing = admissionMicros(rules, body);
  row('realistic: in-process admission', 1e6 / base.cpu, `${us(base)}/admission`);
  row(
    `${FAILING} failing rules: in-process admission`,
    1e6 / failing.cpu,
    `${us(failing)}/admission, ${failing.failed} rules fail; ${(failing.cpu / base.cpu).toFixed(2)}x realistic`,
  );
  // What recording adds to a request where rules failed (nothing is recorded where none fails).
  const failures = new RuleFailures();
  const failed = handleDragnet(parseAdmissionReview(body).request, storeWith(rules).snapshot()).outcome!
    .failures;
  const record = micros(() => failures.record(failed, () => 'Deployment shop/web (CREATE)'));
  row(`recording ${failed.length} failures (RuleFailures.record)`, 1e6 / record.cpu, `${us(record)}/request`);
  const dir = writeRuleFiles(rules);
  const floor = await startChild('floor');
  const server = await startChild('local', dir);
  try {
    const floor64 = await load(floor.url, body, 64, SECONDS);
    const point = await load(server.url, body, 64, SECONDS);
    row('failing: floor c=64', floor64.rps, ms(floor64));
    row(
      `${FAILING} failing rules: dragnet c=64 (serve --local)`,
      point.rps,
      `${ms(point)}; ${(point.rps / floor64.rps).toFixed(2)}x floor`,
    );
  } finally {
    await server.stop();
    await floor.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
