import { CompiledRule } from '../rule/compile';
import { ResourceCatalog } from './catalog';
import { coarsenOnce, couple, Coupled, declinedText, dropDeclines, ScopeLimits } from './clauses';
import { Condition } from './condition';
import { KeyNeed, keyNeeds, Share } from './coupling';
import { NativeOutcome, NativeShares } from './native';
import { mergeProducts, Product, productsOf } from './products';
import { NamespaceSet, ruleReach, RuleReach } from './reach';
import { indexOf, patternKey, ScopeIndex } from './cover';
import { MatchCondition, Scope } from './types';
import { UnservedKind } from './unserved';
import type { Decline } from '../native';

/**
 * How much the scope may say: `guards` (resources, operations, namespaces, and the objects native rules' guards
 * decline), `full` (resources, operations and namespaces), `no-regex` (namespace regexes become "every namespace"),
 * `resources` (webhook rules only: no conditions, no namespace selector of our own). The operator steps down when the
 * API server refuses a level.
 */
export type Precision = 'guards' | 'full' | 'no-regex' | 'resources';
export const PRECISIONS: readonly Precision[] = ['guards', 'full', 'no-regex', 'resources'];

export type { ScopeLimits } from './clauses';

export const DEFAULT_LIMITS: ScopeLimits = {
  maxConditions: 64,
  maxExpression: 90_000,
  maxTotal: 1_000_000,
  maxRegexes: 256,
  // 40% of the API server's budget for one webhook's match conditions (2,500,000), for estimates that are upper bounds.
  maxCost: 1_000_000,
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
export function withoutScope(reg: Scope): Scope {
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
  configured: Scope;
  /** Discovery; null before it is loaded (kind-pinned rules then get every resource of the net). */
  catalog: ResourceCatalog | null;
  precision?: Precision;
  limits?: ScopeLimits;
}

/** One rule's part in the scope, for `modrule scope` and logs. */
export interface RuleScopeReport {
  rule: string;
  /** For a Pod rule's variant (spec.podControllers): the controller kind it is for. */
  controller?: string;
  operations: string[];
  /** `group/resource` (`*` for any) per scope, e.g. `apps/deployments`. */
  resources: string[];
  namespaces: string;
  cluster: boolean;
  notes: string[];
  /** Kinds it names that discovery does not serve (the scope fails wide for them); [] before discovery. */
  unserved: UnservedKind[];
  /** Served kinds it names that the configured net never sends to the webhook (the rule misses their objects). */
  outside: string[];
}

/** The computed registration and how it came about. */
export interface ScopeResult {
  registration: Scope;
  rules: RuleScopeReport[];
  /** Where the limits made the scope coarser than the rules allow (always toward sending more). */
  coarsened: string[];
  precision: Precision;
  /** Our conditions as data (ANDed; the expressions are their CEL text): what `sendsRequest` evaluates. */
  clauses: Condition[];
  /**
   * Rules served natively with a residual, by namespace/name: null when their guards are checked before the call
   * (their objects reach the webhook only where a guard declines), else why every object they may act on does.
   */
  native: ReadonlyMap<string, NativeOutcome>;
  /**
   * The rules' shapes, declines and namespaces: tells cheaply whether one more rule would change the registration.
   */
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
  const { resources, notes, unserved, outside } = group;
  return {
    rule: reach.rule,
    ...(reach.controller ? { controller: reach.controller } : {}),
    operations: [...reach.operations],
    resources,
    namespaces: describeNamespaces(reach),
    cluster: reach.cluster,
    notes: notes.length === 0 ? (reach.notes as string[]) : [...reach.notes, ...notes],
    unserved,
    outside,
  };
}

function resourcesOf(products: readonly Product[]): string[] {
  const resources = new Set<string>();
  for (const p of products)
    for (const g of p.groups) for (const r of p.resources) resources.add(`${g === '' ? 'core' : g}/${r}`);
  return [...resources].sort();
}

/** The rules of one shape (and decline): their share of the net (resolved once) and the union of their namespaces. */
interface ShapeGroup {
  products: Product[];
  notes: string[];
  unserved: UnservedKind[];
  outside: string[];
  resources: string[];
  any: boolean;
  names: Set<string>;
  patterns: Map<string, NamespaceSet['patterns'][number]>;
  cluster: boolean;
  decline: Decline | null;
}

function groupByShape(
  input: ScopeInput,
  natives: NativeShares,
): { groups: ShapeGroup[]; reports: RuleScopeReport[]; index: ScopeIndex } {
  // By shape, then by decline CEL (strings hash once; a concatenation would hash again at every computation).
  const byShape = new Map<string, Map<string, ShapeGroup>>();
  const products = new Map<
    string,
    Pick<ShapeGroup, 'products' | 'notes' | 'unserved' | 'outside' | 'resources'>
  >();
  const reports: RuleScopeReport[] = [];
  for (const rule of withVariants(input.rules)) {
    const reach = reachOf(rule, input.clusterNamespace);
    const decline = natives.declineOf(rule);
    let byDecline = byShape.get(reach.shape);
    if (!byDecline) byShape.set(reach.shape, (byDecline = new Map()));
    let g = byDecline.get(decline?.cel ?? '');
    if (!g) {
      let share = products.get(reach.shape);
      if (!share) {
        const found = productsOf(reach, input.configured.rules, input.catalog);
        share = { ...found, resources: resourcesOf(found.products) };
        products.set(reach.shape, share);
      }
      g = { ...share, any: false, names: new Set(), patterns: new Map(), cluster: false, decline };
      byDecline.set(decline?.cel ?? '', g);
    }
    const ns = reach.namespaces;
    g.any ||= ns.any;
    for (const n of ns.names) g.names.add(n);
    for (const p of ns.patterns) g.patterns.set(patternKey(p), p);
    g.cluster ||= reach.cluster;
    reports.push(report(reach, g));
  }
  return {
    groups: [...byShape.values()].flatMap((m) => [...m.values()]),
    reports,
    index: indexOf(byShape),
  };
}

/**
 * The rules with the controller variants of Pod rules that are not among them yet: a rule admitted a moment ago is
 * given alone (the store lists variants beside their rule), and its controllers' writes must reach the webhook too.
 */
function withVariants(rules: readonly CompiledRule[]): readonly CompiledRule[] {
  if (!rules.some((r) => r.variants)) return rules;
  const seen = new Set(rules);
  const out = [...rules];
  for (const r of rules)
    for (const v of r.variants ?? []) {
      if (seen.has(v)) continue;
      seen.add(v);
      out.push(v);
    }
  return out;
}

/** Coarsening's first step: declines dropped (their rules' objects all reach the webhook); false when none is left. */
function dropDeclineStep(
  needs: Map<string, KeyNeed>,
  natives: NativeShares,
  byCost: boolean,
  coarsened: string[],
  limits: ScopeLimits,
): boolean {
  const declines = dropDeclines(needs, byCost);
  if (declines.length === 0) return false;
  const why = byCost
    ? `their guards would take the conditions over ${limits.maxCost} CEL cost units per request`
    : "the conditions would not fit the API server's limits with their guards";
  coarsened.push(natives.dropped(declines, why));
  return true;
}

/**
 * The dragnet registration the rules need: pure, deterministic (same input, same output), never narrower than the
 * engine (a request the API server does not send could not have been patched or rejected), never wider than the
 * configured net.
 */
export function computeScope(input: ScopeInput): ScopeResult {
  const limits = input.limits ?? DEFAULT_LIMITS;
  const precision = input.precision ?? 'guards';
  const { configured } = input;
  const natives = new NativeShares(precision === 'guards');
  const { groups, reports, index } = groupByShape(input, natives);
  const shares: Share[] = groups
    .filter((g) => g.products.length > 0)
    .map((g) => ({
      products: g.products,
      namespaces: { any: g.any, names: g.names, patterns: [...g.patterns.values()] },
      cluster: g.cluster,
      decline: g.decline,
    }));
  reports.sort((a, b) => (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0));
  const rules = mergeProducts(shares.flatMap((s) => s.products));
  const own = withoutScope(configured).matchConditions;
  const coarsened: string[] = [];
  const none: Coupled = { clauses: [], expressions: [], selectorNames: [], regexes: 0, cost: 0 };
  let coupled = none;
  if (precision !== 'resources') {
    const { needs, wildcardOps } = keyNeeds(shares);
    if (precision === 'no-regex')
      for (const n of needs.values())
        if (n.patterns.size > 0) {
          n.any = true;
          n.patterns.clear();
        }
    // Declines that could not fit whatever else happens go before the conditions are even rendered.
    while (
      declinedText(needs) > limits.maxTotal &&
      dropDeclineStep(needs, natives, false, coarsened, limits)
    );
    for (;;) {
      coupled = couple(needs, wildcardOps, limits);
      const chars =
        coupled.expressions.reduce((s, e) => s + e.length, 0) + coupled.selectorNames.join('", "').length;
      const tooManyRegexes = coupled.regexes > limits.maxRegexes;
      const tooCostly = coupled.cost > limits.maxCost;
      if (
        coupled.expressions.length <= limits.maxConditions - own.length &&
        chars <= limits.maxTotal &&
        !tooManyRegexes &&
        !tooCostly
      )
        break;
      if (dropDeclineStep(needs, natives, tooCostly, coarsened, limits)) continue;
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
    native: natives.outcomes,
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
