import { and, Condition, not, or, regexesIn, renderCel } from './condition';
import type { Decline } from '../native';
import {
  addNamespaces,
  implication,
  KeyNeed,
  NeedTest,
  needTest,
  testCondition,
  testNames,
} from './coupling';

/** The API server's limits on matchConditions, and ours on what the API server evaluates per request. */
export interface ScopeLimits {
  /** Per webhook (API server: 64). */
  maxConditions: number;
  /** Characters per CEL expression (API server: 100,000 code points). */
  maxExpression: number;
  /** Characters over all our conditions and selector values: the configuration must stay far below etcd's 1.5 MiB. */
  maxTotal: number;
  /** Distinct regexes (each one a match per request in the API server). */
  maxRegexes: number;
  /** CEL cost units the conditions may take for one request (the API server's budget for them is 2,500,000). */
  maxCost: number;
}

/*
 * The registration's matchConditions as clauses: each holds a group of OPERATION:resource keys to the namespaces
 * (and objects) that need them. Clauses are ANDed by the API server; each one is an implication, true for every
 * request outside its keys, so the conjunction is the per-key test.
 */

/** Clauses for a key group, sharded by namespace name ranges when one would not fit in an expression. */
function clausesFor(
  keys: string[],
  test: NeedTest,
  maxExpression: number,
  covered: ReadonlySet<string>,
): Condition[] {
  const whole = implication(keys, testCondition(test, null, covered));
  const names = testNames(test);
  if (!test.namespaced || renderCel(whole).length <= maxExpression || names.size < 2) return [whole];
  // Each shard holds the names of one range and lets every namespace outside the range through; all shards together
  // (they are ANDed) require exactly the names. Shards are sized by characters (a name counts once per part).
  const sorted = [...names.keys()];
  const overhead = renderCel(
    implication(keys, testCondition(test, { lo: sorted[0], hi: sorted[0] }, covered)),
  ).length;
  const room = Math.max(1000, maxExpression - overhead - 200);
  const out: Condition[] = [];
  let start = 0;
  while (start < sorted.length) {
    let end = start;
    let size = 0;
    const cost = (name: string) => (name.length + 4) * names.get(name)!;
    while (end < sorted.length && (end === start || size + cost(sorted[end]) <= room))
      size += cost(sorted[end++]);
    const lo = start === 0 ? null : sorted[start];
    const hi = end >= sorted.length ? null : sorted[end];
    out.push(implication(keys, testCondition(test, { lo, hi }, covered)));
    start = end;
  }
  return out;
}

/** Packs clauses (ANDed) into expressions of at most maxExpression characters. */
function pack(clauses: readonly Condition[], maxExpression: number): string[] {
  const out: string[] = [];
  let current: Condition[] = [];
  let length = 0;
  for (const c of clauses) {
    const text = renderCel(c);
    if (current.length > 0 && length + text.length + 6 > maxExpression) {
      out.push(renderCel(and(...current)));
      current = [];
      length = 0;
    }
    current.push(c);
    length += text.length + 6;
  }
  if (current.length > 0) out.push(renderCel(and(...current)));
  return out;
}

export interface Coupled {
  clauses: Condition[];
  expressions: string[];
  selectorNames: string[];
  regexes: number;
  /** The most the conditions may cost the API server for one request (native rules' declines), an upper bound. */
  cost: number;
}

/**
 * The most a key's test may cost for one request: a request evaluates only its own key's clause (the others stop
 * at their key test), and in it only the declines of its namespace (or of cluster-scoped objects).
 */
function testCost(t: NeedTest): number {
  let base = 0;
  let cluster = 0;
  const byName = new Map<string, number>();
  for (const d of t.declined) {
    const cost = d.decline.cost;
    if (d.cluster) cluster += cost;
    if (d.namespaced === 'all' || (d.namespaced && d.namespaced.patterns.length > 0)) base += cost;
    else if (d.namespaced) for (const n of d.namespaced.names) byName.set(n, (byName.get(n) ?? 0) + cost);
  }
  let worst = 0;
  for (const c of byName.values()) worst = Math.max(worst, c);
  return Math.max(cluster, base + worst);
}

/** Every namespace name a need holds, its declined parts' included. */
function namesOf(n: KeyNeed): string[] {
  return [...n.names, ...[...n.declined.values()].flatMap((d) => [...d.names])];
}

/** Whether a need's namespaces are a finite list of names (no pattern, not any, no cluster-scoped object). */
function finiteNeed(n: KeyNeed): boolean {
  return (
    !n.clusterSeen &&
    !n.any &&
    n.patterns.size === 0 &&
    [...n.declined.values()].every((d) => !d.any && d.patterns.size === 0)
  );
}

/** The conditions (and the namespace names for the selector) that hold each key to the namespaces that need it. */
export function couple(needs: Map<string, KeyNeed>, wildcardOps: string[], limits: ScopeLimits): Coupled {
  const tests = new Map<string, { test: NeedTest; keys: string[] }>();
  const concrete: string[] = [];
  let selectorNames: string[] = [];
  // Every need finite and namespaced only: the namespaceSelector can take the names (no size limit per expression),
  // and tests of exactly those names need no condition.
  if ([...needs.values()].every(finiteNeed)) {
    const all = new Set<string>();
    for (const n of needs.values()) for (const name of namesOf(n)) all.add(name);
    selectorNames = [...all].sort();
    if (selectorNames.join('", "').length > limits.maxTotal / 2) selectorNames = [];
  }
  const covered = new Set(selectorNames);
  const group = (keys: string[], n: KeyNeed) => {
    const test = needTest(n);
    if (!test) return;
    const always = testCondition(test, null, covered);
    if (always.t === 'const' && always.value) return; // the selector says the same
    const id = JSON.stringify([
      test.cluster,
      test.both,
      test.namespaced?.names,
      test.namespaced?.patterns.map((p) => p.map((r) => r.source)),
      test.declined.map((d) => [
        d.decline.cel,
        d.cluster,
        d.namespaced === 'all' || d.namespaced === null
          ? d.namespaced
          : [d.namespaced.names, d.namespaced.patterns.map((p) => p.map((r) => r.source))],
      ]),
    ]);
    const entry = tests.get(id);
    if (entry) entry.keys.push(...keys);
    else tests.set(id, { test, keys: [...keys] });
  };
  for (const key of [...needs.keys()].sort()) {
    if (key.endsWith(':*')) continue;
    concrete.push(key);
    group([key], needs.get(key)!);
  }
  const clauses: Condition[] = [];
  let cost = 0;
  for (const id of [...tests.keys()].sort()) {
    const { test, keys } = tests.get(id)!;
    clauses.push(...clausesFor(keys.sort(), test, limits.maxExpression, covered));
    cost = Math.max(cost, testCost(test));
  }
  for (const op of wildcardOps) {
    const test = needTest(needs.get(`${op}:*`)!);
    if (!test) continue;
    const clause = or(
      not({ t: 'opIn', ops: [op] }),
      { t: 'keyIn', keys: concrete },
      testCondition(test, null, covered),
    );
    clauses.push(clause);
    cost = Math.max(cost, testCost(test));
  }
  const regexes = new Set<string>();
  for (const c of clauses) regexesIn(c, regexes);
  return {
    clauses,
    expressions: pack(clauses, limits.maxExpression),
    selectorNames,
    regexes: regexes.size,
    cost,
  };
}

/** The biggest namespace need, made "every namespace": the coarsening step when the scope does not fit. */
export function coarsenOnce(needs: Map<string, KeyNeed>, byRegex: boolean): string | null {
  let worst: [string, KeyNeed] | null = null;
  const weight = (n: KeyNeed) => (byRegex ? n.patterns.size : n.names.size + n.patterns.size * 32);
  for (const entry of needs) {
    const n = entry[1];
    if (n.any || weight(n) === 0) continue;
    if (!worst || weight(n) > weight(worst[1])) worst = entry;
  }
  if (!worst) return null;
  const [key, n] = worst;
  // Every key with the same namespaces goes together (they share their clauses).
  const same = JSON.stringify([[...n.names].sort(), [...n.patterns.keys()].sort()]);
  for (const m of needs.values())
    if (JSON.stringify([[...m.names].sort(), [...m.patterns.keys()].sort()]) === same) m.any = true;
  return `${key} (and keys with the same namespaces): ${n.names.size} names, ${n.patterns.size} patterns -> every namespace`;
}

/**
 * The native rules' declines that weigh most (by cost, or by their text times the keys they appear in) made "every
 * object": their rules' objects all reach the webhook again. The coarsening step before namespaces are touched: it
 * widens only what those rules' policies would have kept from the webhook. The heaviest go first, until half the
 * weight is gone (so thousands of distinct guards coarsen in a few steps), or by cost the costliest ones. Empty: no
 * decline is left.
 */
export function dropDeclines(needs: Map<string, KeyNeed>, byCost: boolean): Decline[] {
  const weights = new Map<string, { decline: Decline; weight: number }>();
  for (const n of needs.values())
    for (const [id, d] of n.declined) {
      const w = weights.get(id) ?? { decline: d.decline, weight: 0 };
      w.weight = byCost ? Math.max(w.weight, d.decline.cost) : w.weight + d.decline.cel.length;
      weights.set(id, w);
    }
  // Ties keep their first-seen order (a stable sort; the needs are visited in a fixed order): comparing the CEL
  // texts themselves would cost more than the whole step.
  const sorted = [...weights].sort((a, b) => b[1].weight - a[1].weight);
  const total = sorted.reduce((sum, [, w]) => sum + w.weight, 0);
  const dropped = new Map<string, Decline>();
  let gone = 0;
  for (const [id, w] of sorted) {
    // By cost: the most expensive, and any as expensive (rules from one template come together).
    if (dropped.size > 0 && (byCost ? w.weight < sorted[0][1].weight : gone >= total / 2)) break;
    dropped.set(id, w.decline);
    gone += w.weight;
  }
  for (const n of needs.values())
    for (const [id, part] of n.declined) {
      if (!dropped.has(id)) continue;
      addNamespaces(n, part);
      n.cluster ||= part.cluster;
      n.declined.delete(id);
    }
  return [...dropped.values()];
}

/** The text the native rules' declines add to the conditions, at least (each decline once per key it is in). */
export function declinedText(needs: Map<string, KeyNeed>): number {
  let total = 0;
  for (const n of needs.values()) for (const d of n.declined.values()) total += d.decline.cel.length;
  return total;
}
