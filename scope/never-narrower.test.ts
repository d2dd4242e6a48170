import fc from 'fast-check';
import { JsonObject } from '../util/json';
import { admit } from '../engine/admit';
import { IGNORE_LABEL, AdmissionOperation, LAST_APPLIED_ANNOTATION } from '../rule/types';
import { compileNative, residualRule } from '../native';
import { RuleSnapshot, RuleStore } from '../store/rules';
import { HIGH_CHURN_RESOURCES, ResourceCatalog } from './catalog';
import { computeScope, DEFAULT_LIMITS, Precision, ScopeResult } from './compute';
import { defaultConfigured } from './defaults';
import { ruleReach } from './reach';
import { sendsRequest } from './sends';
import { apiVersionOf, isClusterKind, request, TEST_KINDS, WIDGET_CRD, WILDCARD_NET } from './testing';
import { Scope, ScopeOperation } from './types';

/*
 * The scope's one promise, checked against the engine itself on random rules and objects: a request the API server
 * does not send (with the computed registration) is one the engine would have answered "allowed, no patch" anyway,
 * and the computed registration never sends what the configured net would not. Some rules are served natively:
 * the webhook then holds their residual rule, and the registration checks their guards on the object.
 */

const NAMESPACES = ['team-a', 'team-b', 'prod', 'kubemod-system'];
const KINDS = [...TEST_KINDS, 'Gadget'];
const OPERATIONS: ScopeOperation[] = ['CREATE', 'UPDATE', 'DELETE'];

const kind = fc.constantFrom(...KINDS);
const item = fc.oneof(
  kind.map((k) => ({ select: '$.kind', matchValue: k })),
  fc.tuple(kind, kind).map(([a, b]) => ({ select: '$.kind', matchValues: [a, b] })),
  fc.constantFrom('^Con', 'map', 'Node|Pod', '.*').map((r) => ({ select: '$.kind', matchRegex: r })),
  kind.map((k) => ({ select: '$.kind', matchValue: k, negate: true })),
  fc.tuple(kind, kind).map(([a, b]) => ({ select: `$.kind == "${a}" || $.kind == '${b}'` })),
  fc.tuple(kind, kind).map(([a, b]) => ({ select: `$.kind in ["${a}", "${b}"]` })),
  fc.constantFrom('v1', 'apps/v1', 'example.com/v1').map((v) => ({ select: '$.apiVersion', matchValue: v })),
  fc.constantFrom(...NAMESPACES).map((ns) => ({ select: '$.metadata.namespace', matchValue: ns })),
  fc.constantFrom('^team', 'prod', 'b$').map((r) => ({ select: '$.metadata.namespace', matchRegex: r })),
  fc.constant({ select: '$.metadata.labels.app', matchValue: 'web' }),
  fc.constant({ select: '$.metadata.labels.app', negate: true }),
  fc.constant({ select: '$.spec.size', matchValue: '3' }),
  fc.constant({ select: '$.spec.items[*].name', matchRegex: '^a' }),
);

const ruleSpec = fc.record({
  namespace: fc.constantFrom(...NAMESPACES),
  type: fc.constantFrom('Patch', 'Reject'),
  operations: fc.option(fc.subarray(['CREATE', 'UPDATE', 'DELETE'], { minLength: 1 }), { nil: undefined }),
  match: fc.array(item, { minLength: 1, maxLength: 3 }),
  regex: fc.option(fc.constantFrom('^team-', '.*', '^$|prod', 'a'), { nil: undefined }),
  selector: fc.boolean(),
});

type RuleSpec = typeof ruleSpec extends fc.Arbitrary<infer T> ? T : never;

function modRule(spec: RuleSpec, i: number): JsonObject {
  const cluster = spec.namespace === 'kubemod-system';
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: `r${i}`, namespace: spec.namespace },
    spec: {
      type: spec.type,
      match: spec.match,
      ...(spec.operations ? { admissionOperations: spec.operations } : {}),
      ...(spec.type === 'Patch'
        ? { patch: [{ op: 'add', path: '/metadata/labels/patched', value: '"yes"' }] }
        : { rejectMessage: 'no' }),
      ...(cluster && spec.regex !== undefined ? { targetNamespaceRegex: spec.regex } : {}),
      ...(cluster && spec.selector ? { targetNamespaceSelector: { matchLabels: { tier: 'gold' } } } : {}),
    },
  };
}

const world = fc.record({
  rules: fc.array(ruleSpec, { minLength: 1, maxLength: 5 }),
  gold: fc.subarray(NAMESPACES),
  ignored: fc.subarray(['team-b', 'prod']),
  wildcard: fc.boolean(),
  widget: fc.boolean(),
  tight: fc.boolean(),
  precision: fc.constantFrom<Precision>('guards', 'guards', 'full', 'no-regex', 'resources'),
  native: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
});

/** Object bodies the rules' guards meet: a spec of every shape, with kubectl's annotation or without. */
const BODIES: JsonObject[] = [
  {},
  { spec: { size: 3, items: [{ name: 'ab' }, { name: 'b' }] } },
  { spec: { size: '3', items: 'not a list' } },
  { spec: { size: [3], items: [{ name: 7 }, 'x'] } },
  { spec: 'a string' },
];

/** A store with the rules of `store` whose criteria pin the kind to a list that holds `kind`. */
function namedOnly(store: RuleStore, kind: string): RuleStore {
  const out = new RuleStore({ clusterNamespace: store.clusterNamespace });
  const named = store.allRules().filter((r) => ruleReach(r, store.clusterNamespace).kinds?.has(kind));
  out.replaceRules([], named);
  for (const ns of [...NAMESPACES, 'other']) {
    const manifest = store.snapshot().namespace(ns);
    if (manifest) out.upsertNamespace(manifest);
  }
  return out;
}

/** Label app, object body, last-applied annotation: the objects each request is tried with. */
const VARIANTS: ReadonlyArray<[string | undefined, number, boolean]> = [
  [undefined, 0, false],
  ['web', 0, false],
  ['web', 0, true],
  ['web', 1, false],
  ['web', 1, true],
  ['web', 2, true],
  ['web', 3, false],
  ['web', 4, false],
];

function namespaceObject(name: string, labels: Record<string, string>): JsonObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;
type Variant = (typeof VARIANTS)[number];

/** The labels of a namespace in world `w`: its name label, `tier: gold` and the ignore label as `w` says. */
function labelsIn(w: World, ns: string): Record<string, string> {
  return {
    'kubernetes.io/metadata.name': ns,
    ...(w.gold.includes(ns) ? { tier: 'gold' } : {}),
    ...(w.ignored.includes(ns) ? { [IGNORE_LABEL]: 'true' } : {}),
  };
}

/** A store with the world's rules and Namespaces; the rules `w.native` picks are served natively where they fit. */
function storeOf(w: World): RuleStore {
  const store = new RuleStore({ clusterNamespace: 'kubemod-system' });
  w.rules.forEach((spec, i) => {
    const problems = store.upsertRule(modRule(spec, i));
    if (problems.length > 0) throw new Error(JSON.stringify(problems));
  });
  for (const ns of [...NAMESPACES, 'other']) store.upsertNamespace(namespaceObject(ns, labelsIn(w, ns)));
  w.rules.forEach((spec, i) => {
    const held = store.ruleOf(spec.namespace, `r${i}`);
    const fit = held && w.native[i] ? compileNative(held, { clusterNamespace: 'kubemod-system' }) : null;
    if (held && fit?.fits) store.serveNatively(held, residualRule(held, fit.guards));
  });
  return store;
}

/** The namespaces requests for a kind are tried in ('' for a cluster-scoped kind; a Namespace's own name). */
function namespacesFor(k: string): readonly string[] {
  if (!isClusterKind(k)) return [...NAMESPACES, 'other'];
  return k === 'Namespace' ? NAMESPACES : [''];
}

/** One world's rules in force: the store, its snapshot, the configured net and the scope computed for them. */
interface Case {
  w: World;
  store: RuleStore;
  snapshot: RuleSnapshot;
  configured: Scope;
  result: ScopeResult;
}

/** The case of world `w`: its store, and the scope computed from the configured net it draws. */
function caseOf(w: World): Case {
  const store = storeOf(w);
  const configured = w.wildcard ? WILDCARD_NET : defaultConfigured();
  const result = computeScope({
    rules: store.allRules(),
    clusterNamespace: 'kubemod-system',
    configured,
    catalog: ResourceCatalog.builtin(w.widget ? [WIDGET_CRD] : []),
    precision: w.precision,
    limits: w.tight ? { ...DEFAULT_LIMITS, maxConditions: 1, maxExpression: 300, maxRegexes: 1 } : undefined,
  });
  return { w, store, snapshot: store.snapshot(), configured, result };
}

/**
 * One request (`op` on a `k` in `ns`, the object as `variant` makes it): thrown when the computed scope skips it
 * while the engine acts on it and the configured net sends it, or sends it while the configured net does not.
 */
function checkRequest(c: Case, op: ScopeOperation, k: string, ns: string, variant: Variant): void {
  const { w, store, snapshot, configured, result } = c;
  const [app, body, applied] = variant;
  const labels: Record<string, string> = app ? { app } : {};
  const object: JsonObject = {
    apiVersion: apiVersionOf(k),
    kind: k,
    metadata: {
      ...(k === 'Namespace'
        ? { name: ns, labels: { ...labelsIn(w, ns), ...labels } }
        : { name: 'x', ...(ns ? { namespace: ns } : {}), labels }),
      ...(applied ? { annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } } : {}),
    },
    ...BODIES[body],
  };
  const nsLabels = k === 'Namespace' ? { ...labelsIn(w, ns), ...labels } : ns ? labelsIn(w, ns) : {};
  const req = { ...request(op, k, ns), namespaceLabels: nsLabels, object };
  // The one exception, by design: a wildcard net leaves high-churn resources out unless a rule names
  // them; only the rules that name the kind must then get its objects.
  const churn = HIGH_CHURN_RESOURCES.includes(req.resource);
  const outcome = admit(
    {
      operation: op as AdmissionOperation,
      object: op === 'DELETE' ? null : object,
      oldObject: op === 'CREATE' ? null : object,
      namespace: k === 'Namespace' ? ns : ns || null,
    },
    churn ? namedOnly(store, k).snapshot() : snapshot,
  );
  const acted = !outcome.allowed || outcome.patch.length > 0;
  const net = sendsRequest(configured, [], req);
  const ours = sendsRequest(result.registration, result.clauses, req);
  if (acted && net && !ours)
    throw new Error(`skipped ${op} ${k} in "${ns}" that the engine acts on: ${JSON.stringify(result.rules)}`);
  if (ours && !net) throw new Error(`sent ${op} ${k} in "${ns}" that the configured net does not`);
}

test('the computed scope never skips a request the engine would act on, nor sends one the net would not', () => {
  fc.assert(
    fc.property(world, (w) => {
      const c = caseOf(w);
      for (const k of TEST_KINDS)
        for (const ns of namespacesFor(k))
          for (const op of OPERATIONS) for (const variant of VARIANTS) checkRequest(c, op, k, ns, variant);
    }),
    { numRuns: 200 },
  );
});
