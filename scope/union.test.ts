import fc from 'fast-check';
import { CompiledRule } from '../rule/compile';
import { Condition } from './condition';
import { CONDITION_PREFIX } from './compute';
import { scopeHash } from './entry';
import { sendsRequest } from './sends';
import { isClusterKind, kindRule, request, rule, scopeOf, TEST_KINDS } from './testing';
import { Scope, ScopeOperation } from './types';
import { scopeIncludes, UnionLevel, UNION_LEVELS, unionScopes } from './union';

const NAMESPACES = ['team-a', 'team-b', 'prod', 'kubemod-system'];
const OPERATIONS: ScopeOperation[] = ['CREATE', 'UPDATE', 'DELETE'];

const spec = fc.record({
  namespace: fc.constantFrom(...NAMESPACES),
  kind: fc.constantFrom(...TEST_KINDS, 'Nope'),
  anyKind: fc.boolean(),
  operations: fc.subarray(OPERATIONS, { minLength: 1 }),
  regex: fc.option(fc.constantFrom('^team-', 'prod', 'b$'), { nil: undefined }),
});

function compiled(s: typeof spec extends fc.Arbitrary<infer T> ? T : never, i: number): CompiledRule {
  if (s.anyKind)
    return rule(s.namespace, `r${i}`, {
      type: 'Reject',
      match: [{ select: '$.metadata.labels.app', matchValue: 'web' }],
      admissionOperations: s.operations,
      ...(s.namespace === 'kubemod-system' && s.regex ? { targetNamespaceRegex: s.regex } : {}),
    });
  return kindRule(s.namespace, `r${i}`, s.kind, {
    admissionOperations: s.operations,
    ...(s.namespace === 'kubemod-system' && s.regex ? { targetNamespaceRegex: s.regex } : {}),
  });
}

const ruleSet = fc.array(spec, { minLength: 0, maxLength: 4 });

/** The union's conditions as data: the wanted ones when it is the wanted registration, the live ones when kept, else none. */
function unionClauses(
  union: Scope,
  live: { registration: Scope; clauses: readonly Condition[] },
  want: { registration: Scope; clauses: readonly Condition[] },
): Condition[] {
  if (union === want.registration) return [...want.clauses];
  const expressions = (r: Scope) =>
    r.matchConditions.filter((c) => c.name.startsWith(CONDITION_PREFIX)).map((c) => c.expression);
  const kept = JSON.stringify(expressions(union)) === JSON.stringify(expressions(live.registration));
  if (!kept) expect(expressions(union)).toEqual([]);
  return kept ? [...live.clauses] : [];
}

function everyRequest(visit: (r: ReturnType<typeof request>) => void): void {
  for (const kind of TEST_KINDS)
    for (const ns of isClusterKind(kind)
      ? kind === 'Namespace'
        ? NAMESPACES
        : ['']
      : [...NAMESPACES, 'other'])
      for (const op of OPERATIONS) visit(request(op, kind, ns));
}

test('the union sends every request either registration sends, at every level', () => {
  fc.assert(
    fc.property(ruleSet, ruleSet, fc.constantFrom<UnionLevel>(...UNION_LEVELS), (a, b, level) => {
      const live = scopeOf(a.map(compiled));
      const want = scopeOf(b.map((s, i) => compiled(s, i + 10)));
      const union = unionScopes(live.registration, want.registration, level);
      const clauses = unionClauses(union, live, want);
      everyRequest((r) => {
        const either =
          sendsRequest(live.registration, live.clauses, r) ||
          sendsRequest(want.registration, want.clauses, r);
        if (either && !sendsRequest(union, clauses, r))
          throw new Error(`union skips ${r.operation} ${r.resource} in "${r.namespace}"`);
      });
    }),
    { numRuns: 400 },
  );
});

test('a union includes both of its parts, so writing it once is enough', () => {
  fc.assert(
    fc.property(ruleSet, ruleSet, (a, b) => {
      const live = scopeOf(a.map(compiled)).registration;
      const want = scopeOf(b.map((s, i) => compiled(s, i + 10))).registration;
      const union = unionScopes(live, want);
      expect(scopeIncludes(union, want)).toBe(true);
      expect(scopeIncludes(union, live)).toBe(true);
      expect(scopeIncludes(live, live)).toBe(true);
    }),
    { numRuns: 300 },
  );
});

test('a rule already covered adds nothing: the live registration is the union', () => {
  const live = scopeOf([kindRule('team-a', 'a', 'Deployment'), kindRule('team-b', 'b', 'ConfigMap')]);
  const again = scopeOf([
    kindRule('team-a', 'a', 'Deployment'),
    kindRule('team-b', 'b', 'ConfigMap'),
    kindRule('team-a', 'c', 'Deployment'),
  ]);
  expect(scopeHash(again.registration)).toBe(scopeHash(live.registration));
  expect(scopeIncludes(live.registration, again.registration)).toBe(true);
});

test('a rule for a new namespace or resource widens: names and resources added, none taken away', () => {
  const live = scopeOf([kindRule('team-a', 'a', 'Deployment')]).registration;
  const want = scopeOf([
    kindRule('team-a', 'a', 'Deployment'),
    kindRule('prod', 'b', 'ConfigMap'),
  ]).registration;
  expect(scopeIncludes(live, want)).toBe(false);
  const union = unionScopes(live, want);
  const resources = union.rules.flatMap((r) => r.resources);
  expect(resources).toEqual(expect.arrayContaining(['deployments', 'configmaps']));
  const names = union.namespaceSelector.matchExpressions?.find((e) => e.operator === 'In')?.values;
  expect(names).toEqual(expect.arrayContaining(['team-a', 'prod']));
  expect(unionScopes(live, want, 'resources').namespaceSelector.matchExpressions).toEqual(
    live.namespaceSelector.matchExpressions?.filter((e) => e.operator !== 'In'),
  );
});
