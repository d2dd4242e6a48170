import { JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { compileNative, NativeFit } from './compile';
import { effectsOf, interferenceProblem, OtherRule } from './interference';

// When a rule may move to a policy (which runs before every webhook-served rule, and again after them).

function rule(name: string, spec: JsonObject, namespace = 'apps'): CompiledRule {
  const compiled = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace },
    spec,
  }).rule;
  if (!compiled) throw new Error(`invalid test rule ${name}`);
  return compiled;
}

function fit(r: CompiledRule): NativeFit {
  const n = compileNative(r);
  if (!n.fits) throw new Error(`${r.name} does not fit: ${JSON.stringify(n.reasons)}`);
  return n;
}

const other = (r: CompiledRule, native = false): OtherRule => ({ rule: r, effects: effectsOf(r), native });

const setsLabel = (name: string, label: string, tier = 0, namespace = 'apps') =>
  rule(
    name,
    {
      type: 'Patch',
      executionTier: tier,
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: `/metadata/labels/${label}`, value: 'x' }],
    },
    namespace,
  );

const readsLabel = (name: string, label: string, tier = 0, namespace = 'apps') =>
  rule(
    name,
    {
      type: 'Patch',
      executionTier: tier,
      match: [{ select: `$.metadata.labels.${label}` }],
      patch: [{ op: 'add', path: '/metadata/annotations/seen', value: '"yes"' }],
    },
    namespace,
  );

describe('interferenceProblem', () => {
  test('rules that touch different paths do not interfere', () => {
    expect(
      interferenceProblem(fit(setsLabel('a', 'team')), [other(setsLabel('b', 'owner'))], 'kubemod-system'),
    ).toBe(undefined);
  });

  test('a rule that runs before it (lower or equal tier) and reads what it writes keeps it on the webhook', () => {
    const candidate = fit(setsLabel('a', 'team', 0));
    expect(interferenceProblem(candidate, [other(readsLabel('b', 'team', -1))], 'kubemod-system')).toContain(
      'ModRule apps/b (tier -1) runs before this rule on the webhook and reads $.metadata.labels.team',
    );
    expect(
      interferenceProblem(candidate, [other(readsLabel('b', 'team', 0))], 'kubemod-system'),
    ).toBeDefined();
    // A later tier sees the label either way.
    expect(interferenceProblem(candidate, [other(readsLabel('b', 'team', 1))], 'kubemod-system')).toBe(
      undefined,
    );
  });

  test('a rule that writes what it reads interferes whatever the tier (the policy runs again after the webhook)', () => {
    const candidate = fit(readsLabel('a', 'team', 0));
    expect(interferenceProblem(candidate, [other(setsLabel('b', 'team', 5))], 'kubemod-system')).toContain(
      'ModRule apps/b (tier 5) writes $.metadata.labels.team',
    );
  });

  test('another native rule has no fixed order with it', () => {
    const candidate = fit(setsLabel('a', 'team', 0));
    expect(
      interferenceProblem(candidate, [other(readsLabel('b', 'team', 9), true)], 'kubemod-system'),
    ).toBeDefined();
  });

  test('a rule whose template reads the whole object reads everything', () => {
    const whole = rule('dump', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: '/metadata/annotations/dump', value: '"{{ toJson . }}"' }],
    });
    expect(effectsOf(whole).reads).toBe('all');
    expect(interferenceProblem(fit(setsLabel('a', 'team')), [other(whole)], 'kubemod-system')).toContain(
      'reads the whole object',
    );
  });

  test('rules of other namespaces cannot see the same objects; cluster-wide ones can', () => {
    const candidate = fit(setsLabel('a', 'team'));
    expect(
      interferenceProblem(candidate, [other(readsLabel('b', 'team', 0, 'shop'))], 'kubemod-system'),
    ).toBe(undefined);
    expect(
      interferenceProblem(candidate, [other(readsLabel('b', 'team', 0, 'kubemod-system'))], 'kubemod-system'),
    ).toBeDefined();
  });

  test('Reject rules see the final object either way; on DELETE, Patch rules that run then interfere', () => {
    const reject = rule('no-team', {
      type: 'Reject',
      admissionOperations: ['CREATE', 'UPDATE', 'DELETE'],
      match: [{ select: '$.metadata.labels.team' }],
    });
    expect(interferenceProblem(fit(reject), [other(setsLabel('b', 'team'))], 'kubemod-system')).toBe(
      undefined,
    );
    const onDelete = rule('on-delete', {
      type: 'Patch',
      admissionOperations: ['DELETE'],
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'x' }],
    });
    expect(interferenceProblem(fit(reject), [other(onDelete)], 'kubemod-system')).toContain('on DELETE');
  });
});
