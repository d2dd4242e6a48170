import { and, Condition, not, or, regexesIn, renderCel } from './condition';
import { implication, KeyNeed, namespacedCondition, NeedTest, needTest, testCondition } from './coupling';

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
}

/*
 * The registration's matchConditions as clauses: each holds a group of OPERATION:resource keys to the namespaces
 * (and objects) that need them. Clauses are ANDed by the API server; each one is an implication, true for every
 * request outside its keys, so the conjunction is the per-key test.
 */

/** Clauses for a key group, sharded by namespace name ranges when one would not fit in an expression. */
function clausesFor(keys: string[], test: NeedTest, maxExpression: number): Condition[] {
  const whole = implication(keys, testCondition(test));
  const ns = test.namespaced;
  if (!ns || renderCel(whole).length <= maxExpression || ns.names.length < 2) return [whole];
  // Each shard holds the names of one range and lets every namespace outside the range through; all shards together
  // (they are ANDed) require exactly the names. Shards are sized by characters.
  const overhead = renderCel(
    implication(keys, testCondition({ ...test, namespaced: { ...ns, names: [] } })),
  ).length;
  const room = Math.max(1000, maxExpression - overhead - 200);
  const out: Condition[] = [];
  let start = 0;
  while (start < ns.names.length) {
    let end = start;
    let size = 0;
    while (end < ns.names.length && (end === start || size + ns.names[end].length + 4 <= room))
      size += ns.names[end++].length + 4;
    const lo = start === 0 ? null : ns.names[start];
    const hi = end >= ns.names.length ? null : ns.names[end];
    out.push(
      implication(keys, testCondition(test, namespacedCondition(ns, ns.names.slice(start, end), lo, hi))),
    );
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
}

/** The conditions (and the namespace names for the selector) that hold each key to the namespaces that need it. */
export function couple(needs: Map<string, KeyNeed>, wildcardOps: string[], limits: ScopeLimits): Coupled {
  const tests = new Map<string, { test: NeedTest; keys: string[] }>();
  const concrete: string[] = [];
  let selectorNames: string[] = [];
  // Every need finite and namespaced only: the namespaceSelector can take the names (no size limit per expression),
  // and keys needing exactly those names need no condition.
  const finite = [...needs.values()].every((n) => !n.clusterSeen && !n.any && n.patterns.size === 0);
  if (finite) {
    const all = new Set<string>();
    for (const n of needs.values()) for (const name of n.names) all.add(name);
    selectorNames = [...all].sort();
    if (selectorNames.join('", "').length > limits.maxTotal / 2) selectorNames = [];
  }
  const covered = new Set(selectorNames);
  const group = (keys: string[], n: KeyNeed) => {
    const test = needTest(n);
    if (!test) return;
    if (covered.size > 0 && test.cluster === null && test.namespaced?.patterns.length === 0) {
      if (test.namespaced.names.length === covered.size) return; // the selector says the same
    }
    const id = JSON.stringify([
      test.cluster,
      test.both,
      test.namespaced?.names,
      test.namespaced?.patterns.map((p) => p.map((r) => r.source)),
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
  for (const id of [...tests.keys()].sort()) {
    const { test, keys } = tests.get(id)!;
    clauses.push(...clausesFor(keys.sort(), test, limits.maxExpression));
  }
  for (const op of wildcardOps) {
    const test = needTest(needs.get(`${op}:*`)!);
    if (!test) continue;
    const rest = or(not({ t: 'opIn', ops: [op] }), { t: 'keyIn', keys: concrete }, testCondition(test));
    clauses.push(rest);
  }
  const regexes = new Set<string>();
  for (const c of clauses) regexesIn(c, regexes);
  return { clauses, expressions: pack(clauses, limits.maxExpression), selectorNames, regexes: regexes.size };
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
