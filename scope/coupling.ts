import { SafeRegex } from '../util/regex';
import type { Decline } from '../native';
import { HIGH_CHURN_RESOURCES } from './catalog';
import { and, choose, Condition, FALSE, not, or, TRUE } from './condition';
import { Product } from './products';
import { NamespaceSet } from './reach';

/** Namespaces as a need holds them: any, some names, names matching patterns (a union). */
export interface NamespaceNeed {
  any: boolean;
  names: Set<string>;
  patterns: Map<string, readonly SafeRegex[]>;
}

/** Where a key is needed only for objects a native rule's guards decline (the rule's residual, on the webhook). */
export interface DeclinedNeed extends NamespaceNeed {
  readonly decline: Decline;
  cluster: boolean;
}

/**
 * Which namespaces need one `OPERATION:resource` key (or `OPERATION:*`, every other resource): the union over the
 * rules whose share of the net holds the key. `cluster` is null when no such rule acts on cluster-scoped objects of
 * the key, `namespaced` false when none acts on namespaced ones (the webhook `rules` then exclude those already).
 * `declined`: rules served natively, which need the key only where their guards decline the object (by decline CEL).
 */
export interface KeyNeed extends NamespaceNeed {
  cluster: boolean;
  /** The scopes the key's products allow: a side the API server never sends needs no test. */
  namespacedSeen: boolean;
  clusterSeen: boolean;
  declined: Map<string, DeclinedNeed>;
}

function emptyNeed(): KeyNeed {
  return {
    any: false,
    names: new Set(),
    patterns: new Map(),
    cluster: false,
    namespacedSeen: false,
    clusterSeen: false,
    declined: new Map(),
  };
}

/** Adds namespaces to a need (a set, or another need's). */
export function addNamespaces(need: NamespaceNeed, set: NamespaceSet | NamespaceNeed): void {
  if (set.any) need.any = true;
  for (const n of set.names) need.names.add(n);
  if (Array.isArray(set.patterns))
    for (const p of set.patterns as NamespaceSet['patterns'])
      need.patterns.set(p.map((r) => r.source).join('\u0000'), p);
  else for (const [k, p] of set.patterns as Map<string, readonly SafeRegex[]>) need.patterns.set(k, p);
}

function declinedPart(need: KeyNeed, decline: Decline): DeclinedNeed {
  let part = need.declined.get(decline.cel);
  if (!part) {
    part = { decline, any: false, names: new Set(), patterns: new Map(), cluster: false };
    need.declined.set(decline.cel, part);
  }
  return part;
}

function mergeInto(need: KeyNeed, other: KeyNeed): void {
  addNamespaces(need, other);
  need.cluster ||= other.cluster;
  need.namespacedSeen ||= other.namespacedSeen;
  need.clusterSeen ||= other.clusterSeen;
  for (const d of other.declined.values()) {
    const part = declinedPart(need, d.decline);
    addNamespaces(part, d);
    part.cluster ||= d.cluster;
  }
}

/** One rule's share, as the coupling needs it (rules of one shape and decline together). */
export interface Share {
  products: readonly Product[];
  namespaces: NamespaceSet;
  cluster: boolean;
  /** A rule served natively: the webhook is needed only where this holds (CREATE and UPDATE). */
  decline: Decline | null;
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
          // DELETE requests carry no object: a residual Reject rule needs them all.
          const part = share.decline && op !== 'DELETE' ? declinedPart(n, share.decline) : n;
          if (namespaced) {
            n.namespacedSeen = true;
            addNamespaces(part, share.namespaces);
          }
          if (cluster) {
            n.clusterSeen = true;
            part.cluster ||= share.cluster;
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

/** Namespaces as a test: names and patterns (a union). */
export interface NamespaceTest {
  names: string[];
  patterns: Array<readonly SafeRegex[]>;
}

/** The part of a key's test that holds only where a native rule's guards decline the object. */
export interface DeclinedTest {
  decline: Decline;
  /** 'all': every namespace (the side's other tests decide nothing for it); null: no namespaced object. */
  namespaced: NamespaceTest | 'all' | null;
  /** Whether cluster-scoped objects are needed where the decline holds. */
  cluster: boolean;
}

/** A key's test, as data: the part a clause is built from (and sharded on). */
export interface NeedTest {
  /** null: the namespaced side needs no test (every namespace, or the API server never sends that side). */
  namespaced: NamespaceTest | null;
  /** null: no cluster-scoped request reaches the test; else whether those are needed. */
  cluster: boolean | null;
  /** Whether both sides can arrive (the test must tell them apart). */
  both: boolean;
  /** Sorted by decline CEL. */
  declined: DeclinedTest[];
}

function namespaceTest(n: NamespaceNeed): NamespaceTest {
  return {
    names: [...n.names].sort(),
    patterns: [...n.patterns.keys()].sort().map((k) => n.patterns.get(k)!),
  };
}

function fullyNeeded(n: KeyNeed, name: string): boolean {
  if (n.names.has(name)) return true;
  for (const p of n.patterns.values()) if (p.every((r) => r.test(name))) return true;
  return false;
}

/** The test a key needs; null when every request the webhook rules let through is needed. */
export function needTest(n: KeyNeed): NeedTest | null {
  const namespaced = n.namespacedSeen && !n.any ? namespaceTest(n) : null;
  const cluster = n.clusterSeen ? n.cluster : null;
  if (!namespaced && (cluster === null || cluster)) return null;
  const declined: DeclinedTest[] = [];
  for (const id of [...n.declined.keys()].sort()) {
    const d = n.declined.get(id)!;
    // Namespaces the key needs in full anyway need no decline.
    const rest = { ...d, names: new Set([...d.names].filter((name) => !fullyNeeded(n, name))) };
    const ns = !namespaced
      ? null
      : d.any
        ? 'all'
        : rest.names.size + d.patterns.size > 0
          ? namespaceTest(rest)
          : null;
    const cl = cluster === false && d.cluster;
    if (ns || cl) declined.push({ decline: d.decline, namespaced: ns, cluster: cl });
  }
  return { namespaced, cluster, both: n.namespacedSeen && n.clusterSeen, declined };
}

/** A range of namespace names [lo, hi) a sharded clause is about (null bounds: open). */
export interface NameRange {
  lo: string | null;
  hi: string | null;
}

function inRange(name: string, range: NameRange | null): boolean {
  return !range || ((range.lo === null || name >= range.lo) && (range.hi === null || name < range.hi));
}

/**
 * Namespaces of a test as a condition, for the names in `range`. `covered`: the names the namespaceSelector
 * already requires; a test of exactly those is true for every request that reaches the conditions.
 */
function namespacesCondition(
  t: NamespaceTest,
  range: NameRange | null,
  covered: ReadonlySet<string> | null,
): Condition {
  if (covered && covered.size > 0 && t.patterns.length === 0 && t.names.length === covered.size) return TRUE;
  const names = t.names.filter((n) => inRange(n, range));
  return or(
    names.length > 0 ? { t: 'nsIn', names } : FALSE,
    ...t.patterns.map((p) => and(...p.map((regex): Condition => ({ t: 'nsMatches', regex })))),
  );
}

/**
 * The whole test of a key as a condition: the namespaces (or cluster-scoped objects) every request is needed in,
 * or where a native rule's guards decline the object. With a range (a shard), only that range's names are tested
 * and every namespace outside it passes.
 */
export function testCondition(
  t: NeedTest,
  range: NameRange | null = null,
  covered: ReadonlySet<string> | null = null,
): Condition {
  const outside = or(
    range?.lo ? { t: 'nsBelow', bound: range.lo } : FALSE,
    range?.hi ? { t: 'nsAtLeast', bound: range.hi } : FALSE,
  );
  const ns = t.namespaced
    ? or(
        outside,
        namespacesCondition(t.namespaced, range, covered),
        ...t.declined.flatMap((d) =>
          d.namespaced === null
            ? []
            : [
                and(d.namespaced === 'all' ? TRUE : namespacesCondition(d.namespaced, range, covered), {
                  t: 'object',
                  decline: d.decline,
                }),
              ],
        ),
      )
    : TRUE;
  if (t.cluster === null) return ns;
  const cl = or(
    t.cluster ? TRUE : FALSE,
    ...t.declined.flatMap((d): Condition[] => (d.cluster ? [{ t: 'object', decline: d.decline }] : [])),
  );
  return t.both ? choose({ t: 'cluster' }, cl, ns) : t.namespaced ? ns : cl;
}

/** Every namespace name a test holds (its own and its declined parts'), sorted, with how often each appears. */
export function testNames(t: NeedTest): Map<string, number> {
  const count = new Map<string, number>();
  const add = (names: readonly string[]) => {
    for (const n of names) count.set(n, (count.get(n) ?? 0) + 1);
  };
  if (t.namespaced) add(t.namespaced.names);
  for (const d of t.declined) if (d.namespaced && d.namespaced !== 'all') add(d.namespaced.names);
  return new Map([...count].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

/** `!(key in keys) || test`: the clause holding one group of keys to their test. */
export function implication(keys: readonly string[], test: Condition): Condition {
  return or(not({ t: 'keyIn', keys }), test);
}
