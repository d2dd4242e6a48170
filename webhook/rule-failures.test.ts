import { RuleStore } from '../store/rules';
import { RuleRef } from '../engine/admit';
import { RuleFailures } from './rule-failures';

const rule = (name: string, value = '{{ div 1 0 }}') => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: 'team' },
  spec: {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/x', value }],
  },
});
const failure = (name: string, message = 'template: error calling div: integer divide by zero') => ({
  rule: { namespace: 'team', name },
  message,
});

describe('RuleFailures: run-time failures per rule over a sliding window', () => {
  let now = 1_000_000;
  const clock = () => now;
  beforeEach(() => (now = 1_000_000));

  it('counts errors over the window, with the last error and object, and forgets a rule once the window passed', () => {
    const failures = new RuleFailures({ windowMs: 10_000, now: clock });
    failures.record([failure('a'), failure('b')], () => 'ConfigMap team/one (CREATE)');
    now += 4_000;
    failures.record([failure('a', 'later')], () => 'ConfigMap team/two (UPDATE)');
    expect(failures.current()).toEqual([
      {
        rule: { namespace: 'team', name: 'a' },
        count: 2,
        lastAt: 1_004_000,
        lastError: 'later',
        lastObject: 'ConfigMap team/two (UPDATE)',
        serial: 2,
      },
      expect.objectContaining({ rule: { namespace: 'team', name: 'b' }, count: 1, serial: 1 }),
    ]);
    // The first errors leave the window: a counts only its second, b is forgotten.
    now += 7_000;
    expect(failures.current().map((r) => [r.rule.name, r.count])).toEqual([['a', 1]]);
    now += 4_000;
    expect(failures.current()).toEqual([]);
    expect(failures.size).toBe(0);
  });

  it('tells listeners when a rule starts failing, not at every error', () => {
    const failures = new RuleFailures({ now: clock });
    const first: RuleRef[] = [];
    failures.onFirstFailure((r) => first.push(r));
    for (let i = 0; i < 5; i++) failures.record([failure('a')], () => 'x');
    failures.record([failure('b')], () => 'x');
    expect(first.map((r) => r.name)).toEqual(['a', 'b']);
  });

  it('starts a changed or deleted rule with a clean record', () => {
    const store = new RuleStore();
    expect(store.upsertRule(rule('a'))).toEqual([]);
    expect(store.upsertRule(rule('b'))).toEqual([]);
    const failures = new RuleFailures({ now: clock }, store);
    failures.record([failure('a'), failure('b')], () => 'x');
    expect(failures.current()).toHaveLength(2);
    store.upsertRule(rule('a', '"fixed"'));
    store.deleteRule('team', 'b');
    expect(failures.current()).toEqual([]);
  });

  it('keeps a bounded error message', () => {
    const failures = new RuleFailures({ now: clock });
    failures.record([failure('a', 'x'.repeat(50_000))], () => 'x');
    expect(failures.current()[0].lastError).toHaveLength(1000);
  });
});
