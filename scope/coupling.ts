import { SafeRegex } from '../util/regex';
import { HIGH_CHURN_RESOURCES } from './catalog';
import { and, choose, Condition, FALSE, not, or, TRUE } from './condition';
import { Product } from './products';
import { NamespaceSet } from './reach';

/**
 * Which namespaces need one `OPERATION:resource` key (or `OPERATION:*`, every other resource): the union over the
 * rules whose share of the net holds the key. `cluster` is null when no such rule acts on cluster-scoped objects of
 * the key, `namespaced` false when none acts on namespaced ones (the webhook `rules` then exclude those already).
 */
export interface KeyNeed {
  any: boolean;
  names: Set<string>;
  patterns: Map<string, readonly SafeRegex[]>;
  cluster: boolean;
  /** The scopes the key's products allow: a side the API server never sends needs no test. */
  namespacedSeen: boolean;
  clusterSeen: boolean;
}

function emptyNeed(): KeyNeed {
  return {
    any: false,
    names: new Set(),
    patterns: new Map(),
    cluster: false,
    namespacedSeen: false,
    clusterSeen: false,
  };
}

function addNamespaces(need: KeyNeed, set: NamespaceSet): void {
  if (set.any) need.any = true;
  for (const n of set.names) need.names.add(n);
  for (const p of set.patterns) need.patterns.set(p.map((r) => r.source).join('\u0000'), p);
}

function mergeInto(need: KeyNeed, other: KeyNeed): void {
  need.any ||= other.any;
  for (const n of other.names) need.names.add(n);
  for (const [k, p] of other.patterns) need.patterns.set(k, p);
  need.cluster ||= other.cluster;
  need.namespacedSeen ||= other.namespacedSeen;
  need.clusterSeen ||= other.clusterSeen;
}

/** One rule's share, as the coupling needs it. */
export interface Share {
  products: readonly Product[];
  namespaces: NamespaceSet;
  cluster: boolean;
}

/**
 * The namespaces each key needs. A wildcard key's namespaces also need every named key of its operation, except the
 * high-churn resources (a wildcard net leaves those out unless some rule names them).
 */
export function keyNeeds(shares: readonly Share[]): { needs: Map<string, KeyNeed>; wildcardOps: string[] } {
  const needs = new Map<string, KeyNeed>();
  const need = (key: string): KeyNeed => {
    let n = needs.get(key);
    if (!n) needs.set(key, (n = emptyNeed()));
    return n;
  };
  for (const share of shares)
    for (const p of share.products) {
      const namespaced = p.scope !== 'Cluster';
      const cluster = p.scope !== 'Namespaced';
      for (const op of p.operations)
        for (const resource of p.resources) {
          const n = need(`${op}:${resource}`);
          if (namespaced) {
            n.namespacedSeen = true;
            addNamespaces(n, share.namespaces);
          }
          if (cluster) {
            n.clusterSeen = true;
            n.cluster ||= share.cluster;
          }
        }
    }
  const wildcardOps = [...needs.keys()].filter((k) => k.endsWith(':*')).map((k) => k.slice(0, -2));
  const churn = new Set(HIGH_CHURN_RESOURCES);
  for (const op of wildcardOps) {
    const wild = needs.get(`${op}:*`)!;
    for (const resource of HIGH_CHURN_RESOURCES) {
      const n = need(`${op}:${resource}`);
      n.namespacedSeen ||= wild.namespacedSeen;
      n.clusterSeen ||= wild.clusterSeen;
    }
    for (const [key, n] of needs) {
      const [keyOp, resource] = key.split(':');
      if (keyOp === op && resource !== '*' && !churn.has(resource)) mergeInto(n, wild);
    }
  }
  return { needs, wildcardOps: wildcardOps.sort() };
}

/** A key's namespace test, as data: the part a clause is built from (and sharded on). */
export interface NeedTest {
  /** null: the namespaced side needs no test (every namespace, or the API server never sends that side). */
  namespaced: { names: string[]; patterns: Array<readonly SafeRegex[]> } | null;
  /** null: no cluster-scoped request reaches the test; else whether those are needed. */
  cluster: boolean | null;
  /** Whether both sides can arrive (the test must tell them apart). */
  both: boolean;
}

/** The test a key needs; null when every request the webhook rules let through is needed. */
export function needTest(n: KeyNeed): NeedTest | null {
  const namespaced =
    n.namespacedSeen && !n.any
      ? { names: [...n.names].sort(), patterns: [...n.patterns.keys()].sort().map((k) => n.patterns.get(k)!) }
      : null;
  const cluster = n.clusterSeen ? n.cluster : null;
  if (!namespaced && (cluster === null || cluster)) return null;
  return { namespaced, cluster, both: n.namespacedSeen && n.clusterSeen };
}

/** The namespaced side of a test, for the names in [lo, hi) (null bounds: open). */
export function namespacedCondition(
  t: NonNullable<NeedTest['namespaced']>,
  names: readonly string[] = t.names,
  lo: string | null = null,
  hi: string | null = null,
): Condition {
  const outside = or(
    lo === null ? FALSE : { t: 'nsBelow', bound: lo },
    hi === null ? FALSE : { t: 'nsAtLeast', bound: hi },
  );
  return or(
    outside,
    names.length > 0 ? { t: 'nsIn', names } : FALSE,
    ...t.patterns.map((p) => and(...p.map((regex): Condition => ({ t: 'nsMatches', regex })))),
  );
}

/** The whole test of a key as a condition (before sharding). */
export function testCondition(t: NeedTest, namespaced: Condition | null = null): Condition {
  const ns = t.namespaced ? (namespaced ?? namespacedCondition(t.namespaced)) : TRUE;
  if (t.cluster === null) return ns;
  const cl = t.cluster ? TRUE : FALSE;
  return t.both ? choose({ t: 'cluster' }, cl, ns) : t.namespaced ? ns : cl;
}

/** `!(key in keys) || test`: the clause holding one group of keys to their test. */
export function implication(keys: readonly string[], test: Condition): Condition {
  return or(not({ t: 'keyIn', keys }), test);
}
