import { JsonObject, JsonValue } from '../util/json';
import { analyzeModRule, compileModRule } from './compile';
import { validateModRule } from './validate';
import { ModRule } from './types';

function rule(namespace: string, references: JsonValue, extra: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace },
    spec: {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Pod' }],
      patch: [
        { op: 'add', path: '/metadata/labels/x', value: '{{ .Target.syntheticRefs.mirror.data.host }}' },
      ],
      references,
      ...extra,
    },
  };
}

const configMap = (more: JsonObject = {}): JsonObject => ({
  name: 'mirror',
  apiVersion: 'v1',
  kind: 'ConfigMap',
  objectName: 'registry',
  ...more,
});

const fields = (obj: JsonObject, allowSecrets = false) =>
  validateModRule(obj, { clusterNamespace: 'kubemod-system', allowSecrets }).map(
    (p) => `${p.field}: ${p.message}`,
  );

describe('spec.references', () => {
  test('a rule without references is unchanged: no references on the compiled rule', () => {
    const r = rule('team-a', null);
    delete (r.spec as JsonObject).references;
    expect(validateModRule(r)).toEqual([]);
    expect(compileModRule(r as unknown as ModRule).references).toBeUndefined();
  });

  test('an object by name in the rule namespace: compiled with the namespace filled in', () => {
    const compiled = compileModRule(rule('team-a', [configMap()]) as unknown as ModRule);
    expect(compiled.references?.named).toEqual([
      {
        name: 'mirror',
        group: '',
        version: 'v1',
        kind: 'ConfigMap',
        namespace: 'team-a',
        objectName: 'registry',
        field: 'spec.references[0]',
      },
    ]);
    expect(compiled.references?.secrets).toBe(false);
  });

  test('a label selector compiles, and equal selectors share one key whatever their key order', () => {
    const a = compileModRule(
      rule('team-a', [
        {
          name: 'teams',
          apiVersion: 'v1',
          kind: 'ConfigMap',
          labelSelector: { matchLabels: { a: '1', b: '2' } },
        },
      ]) as unknown as ModRule,
    );
    const b = compileModRule(
      rule('team-a', [
        {
          name: 'teams',
          apiVersion: 'v1',
          kind: 'ConfigMap',
          labelSelector: { matchLabels: { b: '2', a: '1' } },
        },
      ]) as unknown as ModRule,
    );
    const decl = a.references!.named[0];
    expect(decl.selector?.matches({ a: '1', b: '2' })).toBe(true);
    expect(decl.selector?.matches({ a: '1' })).toBe(false);
    expect(decl.selectorKey).toBe(b.references!.named[0].selectorKey);
  });

  test('a namespaced rule naming another namespace is refused at the field', () => {
    expect(fields(rule('team-a', [configMap({ namespace: 'team-b' })]))).toEqual([
      'spec.references[0].namespace: Forbidden: a ModRule reads only objects of its own namespace (team-a); ' +
        'only ModRules in kubemod-system may read other namespaces',
    ]);
  });

  test('a rule of the cluster namespace reads any namespace and cluster-scoped kinds', () => {
    expect(fields(rule('kubemod-system', [configMap({ namespace: 'platform' })]))).toEqual([]);
    const r = rule('kubemod-system', [
      { name: 'sc', apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', objectName: 'fast' },
    ]);
    expect(fields(r)).toEqual([]);
    expect(compileModRule(r as unknown as ModRule).references?.named[0].namespace).toBe('');
  });

  test('a namespaced rule may not read a cluster-scoped kind', () => {
    expect(
      fields(rule('team-a', [{ name: 'n', apiVersion: 'v1', kind: 'Node', objectName: 'worker-1' }])),
    ).toEqual([
      'spec.references[0].kind: Forbidden: Node is cluster-scoped; only ModRules in kubemod-system may read ' +
        'cluster-scoped objects',
    ]);
  });

  test('offline, every cluster-scoped kind of 1.37 is refused to a namespaced rule', () => {
    for (const [apiVersion, kind] of [
      ['storage.k8s.io/v1', 'VolumeAttributesClass'],
      ['networking.k8s.io/v1', 'ServiceCIDR'],
      ['certificates.k8s.io/v1beta1', 'ClusterTrustBundle'],
      ['resource.k8s.io/v1', 'DeviceClass'],
    ])
      expect(fields(rule('team-a', [{ name: 'n', apiVersion, kind, objectName: 'x' }]))).toEqual([
        `spec.references[0].kind: Forbidden: ${kind} is cluster-scoped; only ModRules in kubemod-system may read ` +
          'cluster-scoped objects',
      ]);
  });

  test("the policy's scopes (the operator's discovery) decide for kinds the offline list does not know", () => {
    const clusterScoped = (group: string, kind: string) => group === 'example.com' && kind === 'Gadget';
    const policy = { clusterNamespace: 'kubemod-system', allowSecrets: false, clusterScoped };
    const gadget = { name: 'g', apiVersion: 'example.com/v1', kind: 'Gadget', objectName: 'blue' };
    // Offline, Gadget is namespaced: a rule of its own namespace may read it.
    expect(fields(rule('team-a', [gadget]))).toEqual([]);
    expect(validateModRule(rule('team-a', [gadget]), policy).map((p) => `${p.field}: ${p.message}`)).toEqual([
      'spec.references[0].kind: Forbidden: Gadget is cluster-scoped; only ModRules in kubemod-system may read ' +
        'cluster-scoped objects',
    ]);
    const wide = analyzeModRule(rule('kubemod-system', [gadget]), { references: policy });
    expect(wide.problems).toEqual([]);
    expect(wide.rule?.references?.named[0].namespace).toBe('');
    // A kind of the same name in another group is not it.
    const other = { ...gadget, apiVersion: 'other.io/v1' };
    expect(validateModRule(rule('team-a', [other]), policy)).toEqual([]);
  });

  test('Secrets are refused unless the policy allows them; then the rule is marked as reading one', () => {
    const r = rule('team-a', [{ name: 'token', apiVersion: 'v1', kind: 'Secret', objectName: 'pull' }]);
    expect(fields(r)).toEqual([
      'spec.references[0].kind: Forbidden: Secret references are off; the operator reads Secrets only when ' +
        'started with --allow-secret-references',
    ]);
    expect(fields(r, true)).toEqual([]);
    const { rule: compiled } = analyzeModRule(r, {
      references: { clusterNamespace: 'kubemod-system', allowSecrets: true },
    });
    expect(compiled?.references?.secrets).toBe(true);
  });

  test('every problem of a bad entry, each at its field', () => {
    expect(
      fields(
        rule('team-a', [
          { name: 'owner', apiVersion: 'apps/v1/x', kind: 'configmap', objectName: 'a', labelSelector: {} },
          { name: '9x', apiVersion: 'v1', kind: 'ConfigMap', objectName: 'Bad_Name', colour: 'red' },
          configMap(),
          configMap(),
          'text',
        ]),
      ),
    ).toEqual([
      'spec.references[0].name: Invalid value: "owner": syntheticRefs.owner is filled in by modrule itself',
      'spec.references[0].apiVersion: Invalid value: "apps/v1/x": must be <version> or <group>/<version>',
      'spec.references[0].kind: Invalid value: "configmap": a kind such as ConfigMap',
      'spec.references[0]: exactly one of objectName (one object) and labelSelector (a list of objects) is required',
      'spec.references[1].colour: unknown field, expected one of: name, apiVersion, kind, namespace, objectName, labelSelector',
      'spec.references[1].name: Invalid value: "9x": letters, digits and \'_\', not starting with a digit, at most 63 characters (it is read as .Target.syntheticRefs.<name>)',
      'spec.references[1].objectName: Invalid value: "Bad_Name": must be an object name',
      'spec.references[3].name: Duplicate value: "mirror" is declared twice',
      'spec.references[4]: must be an object with name, apiVersion, kind and objectName or labelSelector',
    ]);
  });

  test('a bad label selector is reported under its path; the list itself must be a list of at most 16', () => {
    expect(
      fields(
        rule('team-a', [
          {
            name: 'x',
            apiVersion: 'v1',
            kind: 'ConfigMap',
            labelSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] },
          },
        ]),
      ),
    ).toEqual([
      "spec.references[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ]);
    expect(fields(rule('team-a', { mirror: configMap() }))).toEqual([
      'spec.references: must be a list of {name, apiVersion, kind, objectName or labelSelector}',
    ]);
    const many = Array.from({ length: 17 }, (_, i) => configMap({ name: `r${i}` }));
    expect(fields(rule('team-a', many))).toEqual([
      'spec.references: at most 16 references per ModRule, got 17',
    ]);
  });
});
