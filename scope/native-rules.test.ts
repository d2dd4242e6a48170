import { JsonObject } from '../util/json';
import { compileNative, residualRule } from '../native';
import { RuleStore } from '../store/rules';
import { request, scopeOf, sends } from './testing';

/*
 * Native serving and the dragnet scope (issue 18): the scope is computed from the rules the webhook holds
 * (operator/scope/wiring.ts: store.allRules()). A rule served entirely by its policy leaves the registration; one
 * with a residual (objects the policy leaves to the webhook) keeps its part; a rule whose hand-over is pending, or
 * that was handed back, counts in full: the scope fails toward the webhook.
 */

const modRule = (name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: 'apps' },
  spec,
});

// No guards (a Reject rule on a built-in kind): the policy serves it entirely.
const NO_SECRETS = modRule('no-secrets', {
  type: 'Reject',
  match: [{ select: '$.kind', matchValue: 'Secret' }],
});
// A Patch rule keeps a residual: objects with kubectl's last-applied-configuration stay with the webhook.
const TEAM = modRule('team', {
  type: 'Patch',
  match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
  patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
});

function setUp() {
  const store = new RuleStore();
  store.upsertRule(NO_SECRETS);
  store.upsertRule(TEAM);
  let changes = 0;
  store.onChange(() => changes++);
  const handOver = (name: string) => {
    const held = store.ruleOf('apps', name)!;
    const fit = compileNative(held);
    if (!fit.fits) throw new Error(`${name} does not fit`);
    expect(store.serveNatively(held, residualRule(held, fit.guards))).toBe(true);
  };
  const sent = (kind: string) => sends(scopeOf(store.allRules()), request('CREATE', kind, 'apps'));
  return { store, handOver, sent, changes: () => changes };
}

describe('the dragnet scope of rules served natively', () => {
  test('pending: a rule whose policy is not in force yet counts in full', () => {
    const { sent } = setUp();
    expect(sent('Secret')).toBe(true);
    expect(sent('ConfigMap')).toBe(true);
    expect(sent('Deployment')).toBe(false);
  });

  test('a rule served entirely by its policy no longer widens the registration', () => {
    const { store, handOver, sent, changes } = setUp();
    handOver('no-secrets');
    expect(store.nativeRules().get('apps/no-secrets')).toEqual({ partial: false });
    expect(changes()).toBeGreaterThan(0); // the scope is computed again
    expect(sent('Secret')).toBe(false);
    expect(sent('ConfigMap')).toBe(true);
  });

  test('a rule with a residual keeps contributing its part', () => {
    const { store, handOver, sent } = setUp();
    handOver('team');
    expect(store.nativeRules().get('apps/team')).toEqual({ partial: true });
    expect(sent('ConfigMap')).toBe(true);
  });

  test('handed back (policy gone, refused, rule edited): it counts in full again at once', () => {
    const { store, handOver, sent, changes } = setUp();
    handOver('no-secrets');
    const before = changes();
    store.serveByWebhook('apps', 'no-secrets');
    expect(changes()).toBeGreaterThan(before);
    expect(sent('Secret')).toBe(true);
    handOver('no-secrets');
    store.upsertRule({ ...NO_SECRETS, metadata: { name: 'no-secrets', namespace: 'apps', generation: 2 } });
    expect(store.nativeRules().has('apps/no-secrets')).toBe(false);
    expect(sent('Secret')).toBe(true);
  });
});
