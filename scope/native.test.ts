import { JsonObject } from '../util/json';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import { compileNative, residualRule } from '../native';
import { RuleStore } from '../store/rules';
import { DEFAULT_LIMITS } from './compute';
import { renderCel } from './condition';
import { request, scopeOf, sends } from './testing';
import { ScopeRequest } from './types';

/*
 * Rules served natively keep a residual on the webhook (the objects their policy's guards decline). The
 * registration sends those rules' objects only where a guard declines: the guards become part of the match
 * conditions, ORed with what the webhook-served rules need, inside conditions the API server ANDs.
 */

function modRule(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}

const labelRule = (ns: string, name: string, extra: JsonObject[] = []) =>
  modRule(ns, name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }, ...extra],
    patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
  });

/** A store holding the rules, those named in `native` handed to their policies (as operator/native/controller.ts does). */
function storeWith(rules: JsonObject[], native: (name: string) => boolean = () => true): RuleStore {
  const store = new RuleStore();
  store.replaceRules(rules);
  for (const r of rules) {
    const meta = r.metadata as JsonObject;
    if (!native(String(meta.name))) continue;
    const held = store.ruleOf(String(meta.namespace), String(meta.name))!;
    const fit = compileNative(held);
    if (!fit.fits) throw new Error(`${String(meta.name)} does not fit`);
    store.serveNatively(held, residualRule(held, fit.guards));
  }
  return store;
}

const configMap = (ns: string, annotations: JsonObject = {}, labels: JsonObject = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: ns, annotations, labels },
  data: {},
});
const applied = { [LAST_APPLIED_ANNOTATION]: '{"metadata":{}}\n' };
const withObject = (r: ScopeRequest, object: JsonObject): ScopeRequest => ({ ...r, object });

describe('the dragnet scope of rules served natively', () => {
  test("an object every native guard accepts is not sent; kubectl's last-applied one is", () => {
    const result = scopeOf(storeWith([labelRule('apps', 'team')]).allRules());
    expect(result.native.get('apps/team')).toBeNull();
    const plain = withObject(request('CREATE', 'ConfigMap', 'apps'), configMap('apps'));
    expect(sends(result, plain)).toBe(false);
    expect(sends(result, { ...plain, operation: 'UPDATE' })).toBe(false);
    expect(
      sends(result, withObject(request('CREATE', 'ConfigMap', 'apps'), configMap('apps', applied))),
    ).toBe(true);
    // Not the rule's namespace, not its kind: never sent.
    expect(
      sends(result, withObject(request('CREATE', 'ConfigMap', 'other'), configMap('other', applied))),
    ).toBe(false);
    expect(sends(result, request('CREATE', 'Secret', 'apps'))).toBe(false);
    // The conditions read the object only behind type checks, and only after the request's key matched.
    const cel = result.registration.matchConditions.map((c) => c.expression).join('\n');
    expect(cel).toContain('type(object) != map || !(');
    expect(cel).toContain('kubectl.kubernetes.io/last-applied-configuration');
  });

  test('the OR across rules: a webhook-served rule in the same namespace sends every object again', () => {
    const rules = [labelRule('apps', 'team'), labelRule('apps', 'owner'), labelRule('web', 'team')];
    const result = scopeOf(storeWith(rules, (name) => name === 'team').allRules());
    const plain = (ns: string) => withObject(request('CREATE', 'ConfigMap', ns), configMap(ns));
    expect(sends(result, plain('apps'))).toBe(true); // owner is served by the webhook in full
    expect(sends(result, plain('web'))).toBe(false); // only the native team rule here
    const lastApplied = withObject(request('CREATE', 'ConfigMap', 'web'), configMap('web', applied));
    expect(sends(result, lastApplied)).toBe(true);
  });

  test('a Reject rule on a built-in kind with no object guard left is not sent at all', () => {
    const reject = modRule('apps', 'no-forbidden', {
      type: 'Reject',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }, { select: '$.data.forbidden' }],
    });
    const result = scopeOf(storeWith([reject]).allRules());
    expect(result.native.get('apps/no-forbidden')).toBeNull();
    expect(
      sends(result, withObject(request('CREATE', 'ConfigMap', 'apps'), configMap('apps', applied))),
    ).toBe(false);
    // A data that is not a map (a custom resource could have one): the policy cannot decide, the webhook does.
    const odd = { ...configMap('apps'), data: 'text' };
    expect(sends(result, withObject(request('CREATE', 'ConfigMap', 'apps'), odd))).toBe(true);
  });

  test('a guard on the namespace cannot be checked before the call: every object is sent, and the rule says why', () => {
    const flavor = modRule('apps', 'flavor', {
      type: 'Patch',
      match: [
        { select: '$.kind', matchValue: 'ConfigMap' },
        { select: '$.syntheticRefs.namespace.metadata.labels.flavor', matchRegex: '.' },
      ],
      patch: [{ op: 'add', path: '/metadata/labels/flavor', value: 'x' }],
    });
    const result = scopeOf(storeWith([flavor]).allRules());
    expect(result.native.get('apps/flavor')).toMatch(/reads the namespace object/);
    expect(sends(result, withObject(request('CREATE', 'ConfigMap', 'apps'), configMap('apps')))).toBe(true);
  });

  test('below precision "guards" (conditions on objects refused) every object of a native rule is sent', () => {
    const result = scopeOf(storeWith([labelRule('apps', 'team')]).allRules(), { precision: 'full' });
    expect(result.native.get('apps/team')).toMatch(/checks no objects/);
    expect(sends(result, withObject(request('CREATE', 'ConfigMap', 'apps'), configMap('apps')))).toBe(true);
  });

  test('10,000 native rules in 1,000 namespaces fit in a few conditions (one guard set)', () => {
    const rules: JsonObject[] = [];
    for (let n = 0; n < 1000; n++) for (let i = 0; i < 10; i++) rules.push(labelRule(`team-${n}`, `r${i}`));
    const started = Date.now();
    const result = scopeOf(storeWith(rules).allRules());
    const ms = Date.now() - started;
    expect(result.coarsened).toEqual([]);
    expect([...result.native.values()].every((v) => v === null)).toBe(true);
    expect(result.stats.conditions).toBeLessThanOrEqual(2);
    expect(result.stats.selectorNames).toBe(1000);
    expect(sends(result, withObject(request('CREATE', 'ConfigMap', 'team-7'), configMap('team-7')))).toBe(
      false,
    );
    const la = withObject(request('CREATE', 'ConfigMap', 'team-7'), configMap('team-7', applied));
    expect(sends(result, la)).toBe(true);
    expect(ms).toBeLessThan(20_000); // a generous bound: the bench measures it (about a second here)
  });

  test('10,000 native rules with 10,000 different guards coarsen, with a message, and still send what they need', () => {
    const rules: JsonObject[] = [];
    for (let n = 0; n < 1000; n++)
      for (let i = 0; i < 10; i++)
        rules.push(
          labelRule(`team-${n}`, `r${i}`, [{ select: `$.metadata.labels["k-${n}-${i}"]`, matchRegex: '^v' }]),
        );
    const result = scopeOf(storeWith(rules).allRules());
    expect(result.coarsened.length).toBeGreaterThan(0);
    expect(result.coarsened[0]).toMatch(
      /the guards of \d+ native rule\(s\) .* are not checked before the call/,
    );
    const dropped = [...result.native.entries()].filter(([, why]) => why !== null);
    expect(dropped.length).toBeGreaterThan(0);
    expect(result.stats.conditions).toBeLessThanOrEqual(DEFAULT_LIMITS.maxConditions);
    const total = result.registration.matchConditions.reduce((s, c) => s + c.expression.length, 0);
    expect(total).toBeLessThanOrEqual(DEFAULT_LIMITS.maxTotal);
    // A dropped rule's namespace: every ConfigMap is sent. A kept one's: only where its guard declines.
    const [droppedRule] = dropped[0];
    const ns = droppedRule.split('/')[0];
    expect(sends(result, withObject(request('CREATE', 'ConfigMap', ns), configMap(ns)))).toBe(true);
    const kept = [...result.native.entries()].find(([, why]) => why === null);
    if (kept) {
      const keptNs = kept[0].split('/')[0];
      const others = [...result.native.entries()].filter(([r]) => r.startsWith(`${keptNs}/`));
      if (others.every(([, why]) => why === null))
        expect(sends(result, withObject(request('CREATE', 'ConfigMap', keptNs), configMap(keptNs)))).toBe(
          false,
        );
    }
  });

  test('guards that may cost more than the budget allows are dropped first, with a message', () => {
    const rules = [labelRule('apps', 'team', [{ select: '$.spec.items[*].name', matchRegex: 'x' }])];
    const cheap = scopeOf(storeWith(rules).allRules());
    expect(cheap.native.get('apps/team')).toBeNull();
    const tight = scopeOf(storeWith(rules).allRules(), { limits: { ...DEFAULT_LIMITS, maxCost: 1000 } });
    expect(tight.native.get('apps/team')).toMatch(/CEL cost units per request/);
    expect(tight.coarsened.join('\n')).toMatch(/apps\/team/);
    expect(sends(tight, withObject(request('CREATE', 'ConfigMap', 'apps'), configMap('apps')))).toBe(true);
  });

  test('a cluster-wide native rule: namespaces it targets, by regex, and its guards', () => {
    const rule = modRule('kubemod-system', 'all-teams', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
    });
    (rule.spec as JsonObject).targetNamespaceRegex = '^team-';
    const result = scopeOf(storeWith([rule]).allRules());
    const cel = result.clauses.map(renderCel).join(' && ');
    expect(cel).toContain('request.namespace.matches("^team-")');
    expect(sends(result, withObject(request('CREATE', 'ConfigMap', 'team-a'), configMap('team-a')))).toBe(
      false,
    );
    expect(
      sends(result, withObject(request('CREATE', 'ConfigMap', 'team-a'), configMap('team-a', applied))),
    ).toBe(true);
    expect(
      sends(result, withObject(request('CREATE', 'ConfigMap', 'other'), configMap('other', applied))),
    ).toBe(false);
  });
});
