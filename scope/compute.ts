import { CompiledRule } from '../modrule/compile';
import { ResourceCatalog } from './catalog';
import { and, Condition, not, or, regexesIn, renderCel } from './condition';
import {
  implication,
  keyNeeds,
  KeyNeed,
  namespacedCondition,
  NeedTest,
  needTest,
  Share,
  testCondition,
} from './coupling';
import { mergeProducts, Product, productsOf } from './products';
import { NamespaceSet, ruleReach, RuleReach } from './reach';
import { indexOf, patternKey, ScopeIndex } from './cover';
import { MatchCondition, Registration } from './types';
import { UnservedKind } from './unserved';

/**
 * How much the scope may say: `full` (resources, operations and namespaces), `no-regex` (namespace regexes become
 * "every namespace"), `resources` (webhook rules only: no conditions, no namespace selector of our own). The operator
 * steps down when the API server refuses a level.
 */
export type Precision = 'full' | 'no-regex' | 'resources';
export const PRECISIONS: readonly Precision[] = ['full', 'no-regex', 'resources'];

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

export const DEFAULT_LIMITS: ScopeLimits = {
  maxConditions: 64,
  maxExpression: 90_000,
  maxTotal: 1_000_000,
  maxRegexes: 256,
};

/** The prefix of the conditions the operator writes; configured conditions keep their names. */
export const CONDITION_PREFIX = 'modrule.kubemod.io/scope-';
/** Namespace label the API server sets on every Namespace (1.21+). */
export const NAME_LABEL = 'kubernetes.io/metadata.name';
/**
 * A value no namespace can have ('.' and '_' are not allowed in namespace names), added to the namespace names the
 * operator puts in the selector: it marks the requirement as the operator's, so one left behind by a `kubectl apply`
 * of the bundle (which does not remove fields it never set) is not taken for part of the configured net.
 */
export const SELECTOR_MARK = 'modrule.kubemod.io_scope';

/** The registration without what the operator adds (its conditions, its namespace requirement). */
export function withoutScope(reg: Registration): Registration {
  const expressions = (reg.namespaceSelector.matchExpressions ?? []).filter(
    (e) => !(e.key === NAME_LABEL && e.operator === 'In' && e.values?.includes(SELECTOR_MARK)),
  );
  const { matchExpressions: _old, ...selector } = reg.namespaceSelector;
  return {
    rules: reg.rules,
    namespaceSelector: expressions.length > 0 ? { ...selector, matchExpressions: expressions } : selector,
    matchConditions: reg.matchConditions.filter((c) => !c.name.startsWith(CONDITION_PREFIX)),
  };
}

/** What the scope is computed from. */
export interface ScopeInput {
  /** The rules the dragnet serves (today every valid ModRule; rules served natively can be left out). */
  rules: readonly CompiledRule[];
  clusterNamespace: string;
  /** The net as installed (bundle.yaml, or as a user edited it): the widest the scope may be. */
  configured: Registration;
  /** Discovery; null before it is loaded (kind-pinned rules then get every resource of the net). */
  catalog: ResourceCatalog | null;
  precision?: Precision;
  limits?: ScopeLimits;
}

/** One rule's part in the scope, for `modrule scope` and logs. */
export interface RuleScopeReport {
  rule: string;
  operations: string[];
  /** `group/resource` (`*` for any) per scope, e.g. `apps/deployments`. */
  resources: string[];
  namespaces: string;
  cluster: boolean;
  notes: string[];
  /** Kinds it names that discovery does not serve (the scope fails wide for them); [] before discovery. */
  unserved: UnservedKind[];
}

/** The computed registration and how it came about. */
export interface ScopeResult {
  registration: Registration;
  rules: RuleScopeReport[];
  /** Where the limits made the scope coarser than the rules allow (always toward sending more). */
  coarsened: string[];
  precision: Precision;
  /** Our conditions as data (ANDed; the expressions are their CEL text): what `sendsRequest` evaluates. */
  clauses: Condition[];
  /** The rules' shapes and namespaces: tells cheaply whether one more rule would change the registration. */
  index: ScopeIndex;
  stats: { conditions: number; characters: number; regexes: number; selectorNames: number };
}

const reaches = new WeakMap<CompiledRule, { clusterNamespace: string; reach: RuleReach }>();

/** The rule's reach (scope/reach.ts), computed once per compiled rule. */
export function reachOf(rule: CompiledRule, clusterNamespace: string): RuleReach {
  const hit = reaches.get(rule);
  if (hit && hit.clusterNamespace === clusterNamespace) return hit.reach;
  const reach = ruleReach(rule, clusterNamespace);
  reaches.set(rule, { clusterNamespace, reach });
  return reach;
}

function describeNamespaces(reach: RuleReach): string {
  const ns = reach.namespaces;
  if (ns.any) return '*';
  const parts = [...[...ns.names].sort(), ...ns.patterns.map((p) => p.map((r) => `/${r.source}/`).join('&'))];
  return parts.length === 0 ? '-' : parts.join(',');
}

function report(reach: RuleReach, group: ShapeGroup): RuleScopeReport {
  const { resources, notes, unserved } = group;
  return {
    rule: reach.rule,
    operations: [...reach.operations],
    resources,
    namespaces: describeNamespaces(reach),
    cluster: reach.cluster,
    notes: notes.length === 0 ? (reach.notes as string[]) : [...reach.notes, ...notes],
    unserved,
  };
}

function resourcesOf(products: readonly Product[]): string[] {
  const resources = new Set<string>();
  for (const p of products)
    for (const g of p.groups) for (const r of p.resources) resources.add(`${g === '' ? 'core' : g}/${r}`);
  return [...resources].sort();
}

/** The rules of one shape: their share of the net (resolved once) and the union of their namespaces. */
interface ShapeGroup {
  products: Product[];
  notes: string[];
  unserved: UnservedKind[];
  resources: string[];
  any: boolean;
  names: Set<string>;
  patterns: Map<string, NamespaceSet['patterns'][number]>;
  cluster: boolean;
}

function groupByShape(input: ScopeInput): {
  groups: ShapeGroup[];
  reports: RuleScopeReport[];
  index: ScopeIndex;
} {
  const byShape = new Map<string, ShapeGroup>();
  const reports: RuleScopeReport[] = [];
  for (const rule of input.rules) {
    const reach = reachOf(rule, input.clusterNamespace);
    let g = byShape.get(reach.shape);
    if (!g) {
      const { products, notes, unserved } = productsOf(reach, input.configured.rules, input.catalog);
      g = {
        products,
        notes,
        unserved,
        resources: resourcesOf(products),
        any: false,
        names: new Set(),
        patterns: new Map(),
        cluster: false,
      };
      byShape.set(reach.shape, g);
    }
    const ns = reach.namespaces;
    g.any ||= ns.any;
    for (const n of ns.names) g.names.add(n);
    for (const p of ns.patterns) g.patterns.set(patternKey(p), p);
    g.cluster ||= reach.cluster;
    reports.push(report(reach, g));
  }
  return { groups: [...byShape.values()], reports, index: indexOf(byShape) };
}

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

interface Coupled {
  clauses: Condition[];
  expressions: string[];
  selectorNames: string[];
  regexes: number;
}

/** The conditions (and the namespace names for the selector) that hold each key to the namespaces that need it. */
function couple(needs: Map<string, KeyNeed>, wildcardOps: string[], limits: ScopeLimits): Coupled {
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
function coarsenOnce(needs: Map<string, KeyNeed>, byRegex: boolean): string | null {
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
 * The dragnet registration the rules need: pure, deterministic (same input, same output), never narrower than the
 * engine (a request the API server does not send could not have been patched or rejected), never wider than the
 * configured net.
 */
export function computeScope(input: ScopeInput): ScopeResult {
  const limits = input.limits ?? DEFAULT_LIMITS;
  const precision = input.precision ?? 'full';
  const { configured } = input;
  const { groups, reports, index } = groupByShape(input);
  const shares: Share[] = groups
    .filter((g) => g.products.length > 0)
    .map((g) => ({
      products: g.products,
      namespaces: { any: g.any, names: g.names, patterns: [...g.patterns.values()] },
      cluster: g.cluster,
    }));
  reports.sort((a, b) => (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0));
  const rules = mergeProducts(shares.flatMap((s) => s.products));
  const own = withoutScope(configured).matchConditions;
  const coarsened: string[] = [];
  const none: Coupled = { clauses: [], expressions: [], selectorNames: [], regexes: 0 };
  let coupled = none;
  if (precision !== 'resources') {
    const { needs, wildcardOps } = keyNeeds(shares);
    if (precision === 'no-regex')
      for (const n of needs.values())
        if (n.patterns.size > 0) {
          n.any = true;
          n.patterns.clear();
        }
    for (;;) {
      coupled = couple(needs, wildcardOps, limits);
      const chars =
        coupled.expressions.reduce((s, e) => s + e.length, 0) + coupled.selectorNames.join('", "').length;
      const tooManyRegexes = coupled.regexes > limits.maxRegexes;
      if (
        coupled.expressions.length <= limits.maxConditions - own.length &&
        chars <= limits.maxTotal &&
        !tooManyRegexes
      )
        break;
      const step = coarsenOnce(needs, tooManyRegexes);
      if (!step) {
        coupled = none;
        coarsened.push('conditions do not fit: namespaces are not checked before the call');
        break;
      }
      coarsened.push(step);
    }
  }
  const conditions: MatchCondition[] = coupled.expressions.map((expression, i) => ({
    name: `${CONDITION_PREFIX}${i}`,
    expression,
  }));
  const selector = configured.namespaceSelector;
  const namespaceSelector =
    coupled.selectorNames.length === 0
      ? selector
      : {
          ...selector,
          matchExpressions: [
            ...(selector.matchExpressions ?? []),
            { key: NAME_LABEL, operator: 'In' as const, values: [...coupled.selectorNames, SELECTOR_MARK] },
          ],
        };
  return {
    registration: { rules, namespaceSelector, matchConditions: [...own, ...conditions] },
    rules: reports,
    coarsened,
    precision,
    clauses: coupled.clauses,
    index,
    stats: {
      conditions: conditions.length,
      characters: coupled.expressions.reduce((s, e) => s + e.length, 0),
      regexes: coupled.regexes,
      selectorNames: coupled.selectorNames.length,
    },
  };
}
