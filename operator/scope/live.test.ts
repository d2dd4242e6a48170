import { JsonObject } from '../../util/json';
import { defaultConfigured } from '../../scope/defaults';
import { ScopeStamp, stampAnnotations } from '../../scope/ownership';
import { scopeHash, withScope } from '../../scope/entry';
import { Scope } from '../../scope/types';
import { LiveScopeView } from './live';

const narrow: Scope = {
  ...defaultConfigured(),
  rules: [
    {
      apiGroups: ['apps'],
      apiVersions: ['*'],
      resources: ['deployments'],
      operations: ['CREATE'],
      scope: '*',
    },
  ],
};

function configuration(version: string, reg: Scope, stamp?: ScopeStamp): JsonObject {
  return {
    metadata: {
      name: 'kubemod-mutating-webhook-configuration',
      resourceVersion: version,
      annotations: stamp ? stampAnnotations(stamp, defaultConfigured()) : {},
    },
    webhooks: [withScope({ name: 'dragnet.kubemod.io' }, reg)],
  };
}

const stamped = (rulesVersion: string): ScopeStamp => ({
  hash: scopeHash(narrow),
  rulesVersion,
  writer: '1-a',
  mode: 'rules',
});

describe('LiveScopeView', () => {
  let clock = 0;
  const live = () => new LiveScopeView({ now: () => clock });

  test('a late watch event older than the version held is ignored', () => {
    const l = live();
    expect(l.accept(configuration('20', narrow, stamped('7')))).toBe(true);
    expect(l.accept(configuration('19', defaultConfigured()))).toBe(false);
    expect(l.scope()!.ours).toBe(true);
  });

  test("someone else's (wide) registration covers a rule only after a read made once the rule was seen", () => {
    const l = live();
    // The wide net, seen from the watch: a narrower one written meanwhile may still be on its way.
    l.accept(configuration('10', defaultConfigured()));
    l.prove('10');
    expect(l.covers('8')).toBe(false);
    l.acceptRead(configuration('10', defaultConfigured()), '8');
    expect(l.covers('8')).toBe(true);
    expect(l.covers('9')).toBe(false);
  });

  test("the operator's registration covers rules up to its stamp, once the API servers are proven to use it", () => {
    const l = live();
    l.accept(configuration('10', defaultConfigured()));
    l.prove('10');
    clock = 5000;
    l.accept(configuration('11', narrow, stamped('7')));
    expect(l.covers('7')).toBe(false); // just changed: the API servers may not have it yet
    clock = 60_000;
    expect(l.covers('7')).toBe(false); // time alone proves nothing
    l.prove('11');
    expect(l.covers('7')).toBe(true);
    expect(l.covers('8')).toBe(false);
    // What this replica computed from rules at 8 is exactly what is live: covered too.
    expect((l.setComputed({ hash: scopeHash(narrow), rulesVersion: '8' }), l.covers('8'))).toBe(true);
    expect(l.covers('9')).toBe(false);
  });

  test('a live registration wider than what this replica computed covers the rules it was computed from', () => {
    const l = live();
    const wider: Scope = {
      ...narrow,
      rules: [...narrow.rules, { ...narrow.rules[0], resources: ['statefulsets'] }],
    };
    l.accept(configuration('11', wider, { ...stamped('7'), hash: scopeHash(wider) }));
    l.prove('11');
    expect(l.covers('8')).toBe(false);
    // Computed from rules at 8 (only Deployments): the live one, held wider by a rule pending elsewhere, sends it.
    l.setComputed({ hash: scopeHash(narrow), rulesVersion: '8', within: scopeHash(wider) });
    expect(l.covers('8')).toBe(true);
    expect(l.covers('9')).toBe(false);
    // Computed against another live registration: it says nothing of this one.
    l.setComputed({ hash: scopeHash(narrow), rulesVersion: '8', within: scopeHash(defaultConfigured()) });
    expect(l.covers('8')).toBe(false);
  });

  test('no configuration, or no dragnet in it: nothing is sent, nothing covered, and why', () => {
    const l = live();
    expect(l.covers('1')).toBe(false);
    l.accept(null);
    expect(l.covers('1')).toBe(false);
    expect(l.whyNotSent()).toMatch(/dragnet webhook is not registered/);
    const noDragnet = {
      ...configuration('12', narrow, stamped('7')),
      webhooks: [{ name: 'other.example.com' }],
    };
    l.accept(noDragnet);
    l.prove('12');
    expect(l.covers('1')).toBe(false);
  });
});
