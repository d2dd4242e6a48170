import fc from 'fast-check';
import { reachOf } from './compute';
import { addsNothing } from './cover';
import { registrationHash } from './registration';
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
      expect(registrationHash(after.registration)).toBe(registrationHash(before.registration));
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
