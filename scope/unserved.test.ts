import { ResourceCatalog } from './catalog';
import { computeScope } from './compute';
import { defaultConfigured } from './defaults';
import { kindRule, rule } from './testing';
import { describeUnserved, kindField, unservedKindsOf } from './unserved';

const gadgets = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: { group: 'example.com', names: { plural: 'gadgets', kind: 'Gadget' }, scope: 'Namespaced' },
};
const builtin = ResourceCatalog.builtin();

describe('kinds a rule names that the cluster does not serve', () => {
  it('are found with the served kind they are likely a misspelling of', () => {
    const unserved = unservedKindsOf(
      kindRule('team', 'r', ['Deploymnet', 'ConfigMap', 'Gizmo']),
      builtin,
      'kubemod-system',
    );
    expect(unserved).toEqual([
      { kind: 'Deploymnet', groups: null, servedIn: [], suggestion: 'Deployment' },
      { kind: 'Gizmo', groups: null, servedIn: [] },
    ]);
    expect(unserved.map((u) => describeUnserved(u))).toEqual([
      'kind Deploymnet is not served (did you mean Deployment?)',
      'kind Gizmo is not served',
    ]);
    expect(unservedKindsOf(kindRule('team', 'r', 'configmap'), builtin, 'kubemod-system')[0].suggestion).toBe(
      'ConfigMap',
    );
  });

  it('are served once a CRD declares them, and a rule without a kind criterion names none', () => {
    const withCrd = ResourceCatalog.builtin([gadgets]);
    expect(unservedKindsOf(kindRule('team', 'r', 'Gadget'), builtin, 'kubemod-system')).toHaveLength(1);
    expect(unservedKindsOf(kindRule('team', 'r', 'Gadget'), withCrd, 'kubemod-system')).toEqual([]);
    const anyKind = rule('team', 'r', {
      type: 'Patch',
      match: [{ select: '$.metadata.name', matchValue: 'x' }],
      patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
    });
    expect(unservedKindsOf(anyKind, builtin, 'kubemod-system')).toEqual([]);
  });

  it('say where a kind is served when the rule pins another API group', () => {
    const r = rule('team', 'r', {
      type: 'Patch',
      match: [
        { select: '$.apiVersion', matchValue: 'apps/v1' },
        { select: '$.kind', matchValue: 'ConfigMap' },
      ],
      patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
    });
    const [u] = unservedKindsOf(r, builtin, 'kubemod-system');
    expect(describeUnserved(u)).toBe('kind ConfigMap of API group apps is not served (it is in core)');
    expect(kindField(r, 'ConfigMap')).toBe('spec.match[1].matchValue');
  });

  it('are what the scope computation reports per rule (the same finding, not derived twice)', () => {
    const result = computeScope({
      rules: [kindRule('team', 'typo', 'Deploymnet'), kindRule('team', 'ok', 'Deployment')],
      clusterNamespace: 'kubemod-system',
      configured: defaultConfigured('kubemod-system'),
      catalog: builtin,
    });
    expect(result.rules.find((r) => r.rule === 'team/typo')!.unserved).toEqual([
      { kind: 'Deploymnet', groups: null, servedIn: [], suggestion: 'Deployment' },
    ]);
    expect(result.rules.find((r) => r.rule === 'team/ok')!.unserved).toEqual([]);
    // Before discovery nothing is known not to be served.
    const blind = computeScope({
      rules: [kindRule('team', 'typo', 'Deploymnet')],
      clusterNamespace: 'kubemod-system',
      configured: defaultConfigured('kubemod-system'),
      catalog: null,
    });
    expect(blind.rules[0].unserved).toEqual([]);
  });

  it('name the field of the criterion, matchValues and boolean selects too', () => {
    expect(kindField(kindRule('team', 'r', ['A', 'B']), 'B')).toBe('spec.match[0].matchValues');
    const select = rule('team', 'r', {
      type: 'Patch',
      match: [{ select: '$.kind == "Deploymnet"' }],
      patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
    });
    expect(kindField(select, 'Deploymnet')).toBe('spec.match[0].select');
  });
});
