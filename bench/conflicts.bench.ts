import { performance } from 'node:perf_hooks';
import { JsonObject } from '../util/json';
import { RuleStore } from '../store/rules';
import { CompiledRule } from '../rule/compile';
import { conflictSteps, ConflictResult } from '../conflict/find';
import { generatedRules } from '../fixtures/team-rules';
import { CLUSTER_NAMESPACE, crowdedRules } from './workloads';
import { BenchRow } from './types';

/** Workloads this suite runs (`npm run bench -- --only conflicts`). */
export const workloads = ['conflicts'];

/** The operator's slice of the event loop (operator/status/conflicts.ts). */
const SLICE_MS = 5;
const TARGET_MS = 2_000;
/** A step's longest CPU time: a few ms of work, plus a major GC of the rules' heap when one falls in it. */
const SLICE_TARGET_MS = 50;

interface Checked {
  ms: number;
  cpuMs: number;
  /** The longest slice in wall time (a busy machine's preemption included) and in CPU time. */
  longest: number;
  longestCpu: number;
  result: ConflictResult;
}

const cpuMs = (since?: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

/** One check as the operator runs it: steps in slices; the total, the CPU it took, the longest slice. */
function check(rules: readonly CompiledRule[]): Checked {
  const steps = conflictSteps(rules, { clusterNamespace: CLUSTER_NAMESPACE });
  const cpu = process.cpuUsage();
  const start = performance.now();
  let longest = 0;
  let longestCpu = 0;
  for (;;) {
    const slice = performance.now();
    const sliceCpu = process.cpuUsage();
    let next = steps.next();
    while (!next.done && performance.now() - slice < SLICE_MS) next = steps.next();
    longest = Math.max(longest, performance.now() - slice);
    longestCpu = Math.max(longestCpu, cpuMs(sliceCpu));
    if (next.done)
      return { ms: performance.now() - start, cpuMs: cpuMs(cpu), longest, longestCpu, result: next.value };
  }
}

/**
 * The conflict check of 10,000 rules, the first (every rule's facts computed, witnesses run) and again (what a rule
 * change costs: the others' facts cached): the crowded workload (10,150 rules in 1,001 namespaces, 50 cluster-wide)
 * and the team rules (ten per namespace, labels, replicas, sidecars, checks, 100 cluster-wide; pairs to compare).
 */
export async function run(): Promise<BenchRow[]> {
  return [...measure('crowded workload', crowdedRules()), ...measure('team rules', generatedRules(10_000))];
}

function measure(workload: string, objects: JsonObject[]): BenchRow[] {
  const store = new RuleStore({ clusterNamespace: CLUSTER_NAMESPACE, keepSource: false });
  // For scale: what the rule sync itself takes to compile and store the same rules, in one go.
  const synced = process.cpuUsage();
  store.replaceRules(objects);
  const syncMs = cpuMs(synced);
  const rules = store.allRules();
  const row = (what: string, c: Checked): BenchRow => ({
    suite: 'conflicts',
    case: `${workload}, ${rules.length} rules: ${what}`,
    opsPerSec: 1000 / c.ms,
    target: `CPU <= ${TARGET_MS} ms, slices <= ${SLICE_TARGET_MS} ms CPU`,
    pass: c.cpuMs <= TARGET_MS && c.longestCpu <= SLICE_TARGET_MS,
    notes:
      `${Math.round(c.ms)} ms (CPU ${Math.round(c.cpuMs)} ms), longest slice ${c.longest.toFixed(1)} ms ` +
      `(CPU ${c.longestCpu.toFixed(1)} ms), ${c.result.stats.pairs} pairs compared, ` +
      `${c.result.stats.runs} witness runs, ${c.result.conflicts.length} conflicts`,
  });
  const rows = [row('first check', check(rules))];
  const again: Checked[] = [];
  for (let i = 0; i < 5; i++) again.push(check(rules));
  again.sort((a, b) => a.ms - b.ms);
  rows.push(row('check again (median of 5)', again[2]));
  rows.push({
    suite: 'conflicts',
    case: `${workload}, ${rules.length} rules: for scale, the rule sync storing them (one go)`,
    opsPerSec: null,
    notes: `CPU ${Math.round(syncMs)} ms`,
  });
  return rows;
}
