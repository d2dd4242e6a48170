import fc from 'fast-check';
import { CompiledRule } from '../rule/compile';
import { compileNative, declineOf, residualRule } from '../native';
import { RuleStore } from '../store/rules';
import { reachOf } from './compute';
import { addsNothing } from './cover';
import { scopeHash } from './entry';
import { kindRule, scopeOf } from './testing';

const NAMESPACES = ['team-a', 'team-b', 'prod', 'kubemod-system'];

const spec = fc.record({
  namespace: fc.constantFrom(...NAMESPACES),
  kind: fc.constantFrom('Deployment', 'ConfigMap', 'Pod', 'Namespace', 'Nope'),
  regex: fc.option(fc.constantFrom('^team-', 'prod'), { nil: undefined }),
});

const compiled = (s: typeof spec extends fc.Arbitrary<infer T> ? T : never, i: number) =>
  kindRule(
    s.namespace,
    `r${i}`,
    s.kind,
    s.namespace === 'kubemod-system' && s.regex ? { targetNamespaceRegex: s.regex } : {},
  );

test('a rule that adds nothing to the index leaves the computed registration as it is', () => {
  let nothing = 0;
  fc.assert(
    fc.property(fc.array(spec, { maxLength: 5 }), spec, fc.nat(9), (set, extra, pick) => {
      const rules = set.map(compiled);
      const before = scopeOf(rules);
      // Half the time a rule like one already there (another name): the case the fast path is for.
      const candidate = compiled(pick < 5 && set.length > 0 ? set[pick % set.length] : extra, 99);
      if (!addsNothing(before.index, reachOf(candidate, 'kubemod-system'))) return;
      nothing++;
      const after = scopeOf([...rules, candidate]);
      expect(scopeHash(after.registration)).toBe(scopeHash(before.registration));
    }),
    { numRuns: 500 },
  );
  expect(nothing).toBeGreaterThan(100); // the property was exercised
});

test('a new kind, namespace or pattern is not "nothing"', () => {
  const index = scopeOf([kindRule('team-a', 'a', 'Deployment')]).index;
  const reach = (r: ReturnType<typeof kindRule>) => reachOf(r, 'kubemod-system');
  expect(addsNothing(index, reach(kindRule('team-a', 'b', 'Deployment')))).toBe(true);
  expect(addsNothing(index, reach(kindRule('team-b', 'b', 'Deployment')))).toBe(false);
  expect(addsNothing(index, reach(kindRule('team-a', 'b', 'ConfigMap')))).toBe(false);
  expect(
    addsNothing(
      index,
      reach(kindRule('kubemod-system', 'c', 'Deployment', { targetNamespaceRegex: '^team-' })),
    ),
  ).toBe(false);
});

describe('rules served natively', () => {
  const labelRule = (namespace: string, name: string) => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace },
    spec: {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
    },
  });
  /** The rule as the store holds it: its residual when `native` (operator/native/controller.ts), else the rule in full. */
  const held = (namespace: string, name: string, native: boolean): CompiledRule => {
    const store = new RuleStore();
    store.replaceRules([labelRule(namespace, name)]);
    const full = store.ruleOf(namespace, name)!;
    if (!native) return full;
    const fit = compileNative(full);
    if (!fit.fits) throw new Error('the label rule fits');
    store.serveNatively(full, residualRule(full, fit.guards));
    return store.allRules()[0];
  };
  const declineCel = (r: CompiledRule) => {
    const outcome = declineOf(r);
    return outcome && 'decline' in outcome ? outcome.decline.cel : '';
  };
  const reach = (r: CompiledRule) => reachOf(r, 'kubemod-system');

  test("a rule that needs every object is not covered by a native rule's guards of the same shape", () => {
    const native = held('apps', 'a', true);
    expect(declineCel(native)).not.toBe('');
    const before = scopeOf([native]);
    // A webhook-served rule of the same shape and namespace (a ModRule just admitted): the registration sends
    // only the objects the guards decline, so it must be widened for this one.
    const plain = held('apps', 'b', false);
    expect(addsNothing(before.index, reach(plain))).toBe(false);
    expect(scopeHash(scopeOf([native, plain]).registration)).not.toBe(scopeHash(before.registration));
    // Another native rule with the same guards adds nothing; asked as one needing every object, it would.
    const twin = held('apps', 'c', true);
    expect(addsNothing(before.index, reach(twin), declineCel(twin))).toBe(true);
    expect(scopeHash(scopeOf([native, twin]).registration)).toBe(scopeHash(before.registration));
    // A rule in full covers nothing native: its decline's group is not there either.
    expect(addsNothing(scopeOf([plain]).index, reach(twin), declineCel(twin))).toBe(false);
  });

  test('whatever the mix, a rule that adds nothing leaves the computed registration as it is', () => {
    const one = fc.record({ namespace: fc.constantFrom('apps', 'web'), native: fc.boolean() });
    let nothing = 0;
    fc.assert(
      fc.property(fc.array(one, { maxLength: 4 }), one, (set, extra) => {
        const rules = set.map((s, i) => held(s.namespace, `r${i}`, s.native));
        const candidate = held(extra.namespace, 'x', extra.native);
        const before = scopeOf(rules);
        if (!addsNothing(before.index, reach(candidate), declineCel(candidate))) return;
        nothing++;
        expect(scopeHash(scopeOf([...rules, candidate]).registration)).toBe(scopeHash(before.registration));
      }),
      { numRuns: 200 },
    );
    expect(nothing).toBeGreaterThan(20);
  });
});
