import { RuleStore } from '../store/rules';
import { ResourceCatalog } from '../scope/catalog';
import { computeScope, ScopeResult } from '../scope/compute';
import { defaultConfigured } from '../scope/defaults';
import { compileNative, residualRule } from '../native';
import { CLUSTER_NAMESPACE, crowdedRules } from './workloads';
import { BenchRow } from './types';

/** Workloads this suite runs (`npm run bench -- --only scope`). */
export const workloads = ['scope'];

const TARGET_MS = 100;

/**
 * How long the operator takes to compute the dragnet registration for the crowded workload (10,150 rules in 1,001
 * namespaces, 50 of them cluster-wide with a regex): once cold (every rule analysed) and then per recomputation
 * (what each rule change costs; rules of one shape are resolved once).
 */
export async function run(): Promise<BenchRow[]> {
  const store = new RuleStore({ clusterNamespace: CLUSTER_NAMESPACE, keepSource: false });
  store.replaceRules(crowdedRules());
  const rows = [measure(store, 'rules')];
  // The same rules where they fit served natively: the webhook keeps their residuals, the registration their guards.
  for (const rule of store.allRules()) {
    const fit = compileNative(rule, { clusterNamespace: CLUSTER_NAMESPACE });
    if (fit.fits) store.serveNatively(rule, residualRule(rule, fit.guards));
  }
  rows.push(
    measure(store, `rules (${store.nativeRules().size} served natively, their guards in the conditions)`),
  );
  return rows;
}

function measure(store: RuleStore, what: string): BenchRow {
  const rules = store.allRules();
  const input = {
    rules,
    clusterNamespace: CLUSTER_NAMESPACE,
    configured: defaultConfigured(),
    catalog: ResourceCatalog.builtin(),
  };
  let start = process.hrtime.bigint();
  let result: ScopeResult = computeScope(input);
  const cold = Number(process.hrtime.bigint() - start) / 1e6;
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    start = process.hrtime.bigint();
    result = computeScope(input);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  const median = times[times.length >> 1];
  const { stats } = result;
  return {
    suite: 'scope',
    case: `dragnet registration for ${rules.length} ${what}, recomputed`,
    opsPerSec: 1000 / median,
    target: `<= ${TARGET_MS} ms`,
    pass: median <= TARGET_MS,
    notes:
      `${median.toFixed(1)} ms median of 20 (cold ${cold.toFixed(0)} ms); ${result.registration.rules.length} ` +
      `webhook rules, ${stats.conditions} conditions (${stats.characters} chars, ${stats.regexes} regexes), ` +
      `${stats.selectorNames} names in the selector` +
      (result.coarsened.length > 0 ? `; ${result.coarsened.length} coarsening steps` : ''),
  };
}
