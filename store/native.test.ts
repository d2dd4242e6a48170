import { analyzeModRule } from '../rule/compile';
import { compileNative, residualRule } from '../native';
import { RuleStore } from './rules';

// The store's side of native serving: what the webhook's snapshots hold while a rule's policy is in force.

const patchRule = (name: string, value = 'x') => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: 'apps' },
  spec: {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/team', value }],
  },
});

const rejectRule = (name: string) => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: 'apps' },
  spec: { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Secret' }] },
});

function residualOf(store: RuleStore, name: string) {
  const held = store.ruleOf('apps', name)!;
  const native = compileNative(analyzeModRule(patchRule(name)).rule!);
  if (!native.fits) throw new Error('does not fit');
  return { held, residual: residualRule(held, native.guards) };
}

const served = (store: RuleStore) => store.snapshot().rulesFor('apps');

describe('RuleStore native serving', () => {
  test('the webhook holds the residual rule while the policy serves the rule, and the full rule after', () => {
    const store = new RuleStore();
    store.upsertRule(patchRule('team'));
    const { held, residual } = residualOf(store, 'team');
    expect(residual).not.toBeNull();
    expect(store.serveNatively(held, residual)).toBe(true);
    expect(served(store)).toEqual([residual]);
    expect(store.ruleOf('apps', 'team')).toBe(held);
    expect(store.nativeRules()).toEqual(new Map([['apps/team', { partial: true }]]));
    expect(store.snapshot().ruleCount).toBe(1);
    store.serveByWebhook('apps', 'team');
    expect(served(store)).toEqual([held]);
    expect(store.nativeRules().size).toBe(0);
  });

  test('a rule the policy serves entirely leaves the webhook, but still counts', () => {
    const store = new RuleStore();
    store.upsertRule(rejectRule('no-secrets'));
    store.upsertRule(patchRule('team'));
    const held = store.ruleOf('apps', 'no-secrets')!;
    const native = compileNative(held);
    expect(native.fits && native.guards.list).toEqual([]);
    expect(store.serveNatively(held, null)).toBe(true);
    expect(served(store).map((r) => r.name)).toEqual(['team']);
    expect(store.snapshot().ruleCount).toBe(2);
    expect(store.nativeRules().get('apps/no-secrets')).toEqual({ partial: false });
    store.deleteRule('apps', 'no-secrets');
    expect(store.snapshot().ruleCount).toBe(1);
    expect(store.nativeRules().size).toBe(0);
  });

  test('a new version of the rule goes back to the webhook, and the old one cannot be served natively', () => {
    const store = new RuleStore();
    store.upsertRule(patchRule('team'));
    const { held, residual } = residualOf(store, 'team');
    store.serveNatively(held, residual);
    store.upsertRule(patchRule('team', 'y'));
    const newer = store.ruleOf('apps', 'team')!;
    expect(newer).not.toBe(held);
    expect(served(store)).toEqual([newer]);
    expect(store.nativeRules().size).toBe(0);
    // The controller finished with the old version: refused, the webhook keeps serving the new one in full.
    expect(store.serveNatively(held, residual)).toBe(false);
    expect(served(store)).toEqual([newer]);
  });

  test('a relist serves everything by webhook again', () => {
    const store = new RuleStore();
    store.upsertRule(rejectRule('no-secrets'));
    store.serveNatively(store.ruleOf('apps', 'no-secrets')!, null);
    store.replaceRules([rejectRule('no-secrets')]);
    expect(served(store).map((r) => r.name)).toEqual(['no-secrets']);
    expect(store.snapshot().ruleCount).toBe(1);
    expect(store.nativeRules().size).toBe(0);
  });
});
