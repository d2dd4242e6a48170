import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { analyzeModRule } from '../../rule/compile';
import { ResourceCatalog } from '../../scope/catalog';
import { computeScope } from '../../scope/compute';
import { defaultConfigured } from '../../scope/defaults';
import { StatusReporter } from '../status/reporter';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { modRule } from '../testing/objects';
import { OUTSIDE_NET, ScopeFinding, UNKNOWN_KIND, unknownKindFacet } from './findings';

const kindRule = (name: string, kind: string) =>
  modRule('team', name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: kind }],
    patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
  });

/** The scope's per-rule reports for these rules, as ScopeController hands them to the findings. */
function reportsOf(
  rules: JsonObject[],
  catalog = ResourceCatalog.builtin(),
  configured = defaultConfigured('kubemod-system'),
) {
  return computeScope({
    rules: rules.map((r) => analyzeModRule(r).rule!),
    clusterNamespace: 'kubemod-system',
    configured,
    catalog,
  }).rules;
}

describe('unknownKindFacet', () => {
  it('says which kind is not served, what it is likely meant to be, and what that does to the net', () => {
    const [report] = reportsOf([kindRule('typo', 'Deploymnet')]);
    expect(unknownKindFacet(report, true)).toEqual({
      condition: {
        type: 'UnknownKind',
        reason: 'KindNotServed',
        message:
          'kind Deploymnet is not served (did you mean Deployment?). Until it is, the rule matches no object of ' +
          "it, and the dragnet's registration sends the webhook every resource of namespace team for it, so that a " +
          'CustomResourceDefinition installed later is covered at once.',
      },
    });
    expect(unknownKindFacet(report, false)?.condition?.message).toMatch(
      /matches no object of it, and the dragnet's registration is the configured net either way\.$/,
    );
    expect(unknownKindFacet(reportsOf([kindRule('ok', 'Deployment')])[0], true)).toBeUndefined();
  });
});

describe('ScopeFinding on the (fake) API server', () => {
  const harness = useClusterSync();
  let api: FakeApiServer;
  let status: StatusReporter;
  beforeEach(() => ({ api, status } = harness));

  const conditions = (name: string) =>
    ((api.get('modrules', 'team', name)?.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
  /** A finding's gauge, as exported. */
  const gauge = async (registry: Registry, name: string) =>
    (await registry.getSingleMetric(name)!.get()).values[0].value;

  it('shows UnknownKind and names it first in Ready, counts it, and clears it once the kind is served', async () => {
    const registry = new Registry();
    const unknown = new ScopeFinding(UNKNOWN_KIND, status, registry);
    const rules = [kindRule('typo', 'Gadget'), kindRule('ok', 'Deployment')].map((r) =>
      api.put('modrules', r),
    );
    for (const r of rules) status.report(r, []);
    unknown.update(reportsOf(rules), true);
    await eventually(() => conditions('typo').length === 2);
    expect(conditions('typo')).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'True',
        message: 'in effect, but kind Gadget is not served',
      }),
      expect.objectContaining({ type: 'UnknownKind', status: 'True', reason: 'KindNotServed' }),
    ]);
    await eventually(() => conditions('ok').length === 1);
    expect(await gauge(registry, 'modrule_rules_unknown_kind')).toBe(1);
    await eventually(() => api.list('events').length === 1);
    expect(api.list('events')[0]).toMatchObject({
      type: 'Warning',
      reason: 'ModRuleKindNotServed',
      involvedObject: { kind: 'ModRule', name: 'typo' },
      message: expect.stringContaining('kind Gadget is not served'),
    });
    // A CRD declares the kind: the next computation clears it (kept, False).
    const gadgets = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.example.com' },
      spec: { group: 'example.com', names: { plural: 'gadgets', kind: 'Gadget' }, scope: 'Namespaced' },
    };
    status.report(api.get('modrules', 'team', 'typo')!, []);
    unknown.update(reportsOf(rules, ResourceCatalog.builtin([gadgets])), true);
    await eventually(() => conditions('typo')[1]?.status === 'False');
    expect(conditions('typo')[0]).toMatchObject({
      status: 'True',
      message: 'ModRule is valid and in effect',
    });
    expect(conditions('typo')[1]).toMatchObject({ reason: 'KindsServed' });
    expect(unknown.size).toBe(0);
    expect(await gauge(registry, 'modrule_rules_unknown_kind')).toBe(0);
  });

  it('shows OutsideNet for a served kind the configured net leaves out, counts it, and clears it once the net sends it', async () => {
    const registry = new Registry();
    const outside = new ScopeFinding(OUTSIDE_NET, status, registry);
    const rules = [kindRule('leases', 'Lease'), kindRule('ok', 'Deployment')].map((r) =>
      api.put('modrules', r),
    );
    for (const r of rules) status.report(r, []);
    // The bundle's net (KubeMod's list) has no leases.
    outside.update(reportsOf(rules), true);
    await eventually(() => conditions('leases').length === 2);
    expect(conditions('leases')).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'True',
        message: "in effect, but kind Lease is outside the dragnet's configured net",
      }),
      expect.objectContaining({ type: 'OutsideNet', status: 'True', reason: 'OutsideConfiguredNet' }),
    ]);
    expect(String(conditions('leases')[1].message)).toContain('the rule acts on none of them');
    await eventually(() => conditions('ok').length === 1);
    expect(await gauge(registry, 'modrule_rules_outside_net')).toBe(1);
    await eventually(() => api.list('events').length === 1);
    expect(api.list('events')[0]).toMatchObject({
      type: 'Warning',
      reason: 'ModRuleOutsideNet',
      involvedObject: { kind: 'ModRule', name: 'leases' },
      message: expect.stringContaining("kind Lease is outside the dragnet's configured net"),
    });
    // The next computations say the same: no second Event.
    outside.update(reportsOf(rules), true);
    await status.idle();
    expect(api.list('events')).toHaveLength(1);
    // The net is widened to every resource (as docs/install.md shows): the condition clears (kept, False).
    const wide = defaultConfigured('kubemod-system');
    const everything = { ...wide, rules: wide.rules.map((r) => ({ ...r, resources: ['*'] })) };
    status.report(api.get('modrules', 'team', 'leases')!, []);
    outside.update(reportsOf(rules, ResourceCatalog.builtin(), everything), true);
    await eventually(() => conditions('leases')[1]?.status === 'False');
    expect(conditions('leases')[0]).toMatchObject({
      status: 'True',
      message: 'ModRule is valid and in effect',
    });
    expect(conditions('leases')[1]).toMatchObject({ reason: 'InConfiguredNet' });
    expect(await gauge(registry, 'modrule_rules_outside_net')).toBe(0);
  });
});
