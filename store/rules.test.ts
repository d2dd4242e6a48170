import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { RuleStore } from './rules';

function modRule(namespace: string, name: string, spec: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace },
    spec: { type: 'Reject', match: [{ select: '$.kind' }], ...spec },
  };
}

const names = (rules: readonly { namespace: string; name: string }[]): string[] =>
  rules.map((r) => `${r.namespace}/${r.name}`);

describe('RuleStore', () => {
  test('rules are sorted by tier, then namespace/name, and merged with matching cluster-wide rules', () => {
    const store = new RuleStore();
    store.upsertRule(modRule('team-a', 'b', { executionTier: 2 }));
    store.upsertRule(modRule('team-a', 'a', { executionTier: 2 }));
    store.upsertRule(modRule('team-a', 'z', { executionTier: -1 }));
    store.upsertRule(modRule('kubemod-system', 'wide', { targetNamespaceRegex: '^team-', executionTier: 2 }));
    store.upsertRule(modRule('kubemod-system', 'cluster'));
    store.upsertRule(modRule('team-b', 'other'));
    const snap = store.snapshot();
    expect(names(snap.rulesFor('team-a'))).toEqual([
      'team-a/z',
      'kubemod-system/wide',
      'team-a/a',
      'team-a/b',
    ]);
    expect(names(snap.rulesFor('team-b'))).toEqual(['team-b/other', 'kubemod-system/wide']);
    expect(names(snap.rulesFor('default'))).toEqual([]);
    expect(names(snap.rulesFor(null))).toEqual(['kubemod-system/cluster']);
    expect(names(snap.rulesFor(''))).toEqual(['kubemod-system/cluster']);
    // Objects in the cluster namespace itself get its rules once each.
    expect(names(snap.rulesFor('kubemod-system'))).toEqual(['kubemod-system/cluster', 'kubemod-system/wide']);
    expect(snap.ruleCount).toBe(6);
    // Memoized: the same array for the same namespace within a snapshot.
    expect(snap.rulesFor('team-a')).toBe(snap.rulesFor('team-a'));
  });

  test('a snapshot never changes; the store moves on', () => {
    const store = new RuleStore();
    store.upsertRule(modRule('ns', 'one'));
    const first = store.snapshot();
    expect(store.snapshot()).toBe(first); // O(1) while nothing changes
    const listBefore = first.rulesFor('ns');
    store.upsertRule(modRule('ns', 'two'));
    store.deleteRule('ns', 'one');
    store.upsertNamespace(loadFixture('namespace'));
    store.upsertNode(loadFixture('node'));
    expect(names(first.rulesFor('ns'))).toEqual(['ns/one']);
    expect(names(listBefore)).toEqual(['ns/one']);
    expect(first.ruleCount).toBe(1);
    expect(first.namespace('default')).toBeUndefined();
    expect(first.node('worker-1')).toBeUndefined();
    const second = store.snapshot();
    expect(second).not.toBe(first);
    expect(names(second.rulesFor('ns'))).toEqual(['ns/two']);
    expect(second.namespace('default')).toBeDefined();
    expect(second.node('worker-1')).toBeDefined();
  });

  test('upsert replaces by namespace/name; an invalid version removes the old one and says why', () => {
    const store = new RuleStore();
    expect(store.upsertRule(modRule('ns', 'r', { executionTier: 1 }))).toEqual([]);
    expect(store.upsertRule(modRule('ns', 'r', { executionTier: 3 }))).toEqual([]);
    expect(
      store
        .snapshot()
        .rulesFor('ns')
        .map((r) => r.tier),
    ).toEqual([3]);
    const problems = store.upsertRule(
      modRule('ns', 'r', { match: [{ select: '$.kind', matchRegex: '(abc' }] }),
    );
    expect(problems).toEqual([
      { field: 'spec.match[0].matchRegex', message: expect.stringContaining('invalid regex') },
    ]);
    expect(store.snapshot().rulesFor('ns')).toEqual([]);
    expect(store.snapshot().ruleCount).toBe(0);
  });

  test('rules need a namespace', () => {
    const store = new RuleStore();
    const rule = modRule('', 'r');
    delete (rule.metadata as JsonObject).namespace;
    expect(store.upsertRule(rule)).toEqual([{ field: 'metadata.namespace', message: expect.any(String) }]);
  });

  test('replaceRules swaps everything and returns the rejected ones', () => {
    const store = new RuleStore();
    store.upsertRule(modRule('old', 'gone'));
    const rejected = store.replaceRules([
      modRule('a', 'x'),
      modRule('b', 'y', { type: 'Sideways' }),
      modRule('a', 'x', { executionTier: 7 }),
      'not a rule',
    ]);
    expect(rejected.map((r) => `${r.namespace}/${r.name}`)).toEqual(['b/y', '/']);
    expect(rejected[0].problems[0].field).toBe('spec.type');
    const snap = store.snapshot();
    expect(snap.ruleCount).toBe(1);
    expect(snap.rulesFor('a').map((r) => r.tier)).toEqual([7]);
    expect(snap.rulesFor('old')).toEqual([]);
  });

  test('replaceRules takes compiled rules as they are; a raw rule with the same name replaces one', () => {
    const store = new RuleStore({ keepSource: false });
    const kept = store.compileRule(modRule('a', 'kept', { executionTier: 3 })).rule;
    const replaced = store.compileRule(modRule('a', 'x')).rule;
    if (!kept || !replaced) throw new Error('expected valid rules');
    expect(store.compileRule(modRule('', 'r')).problems).toEqual([
      { field: 'metadata.namespace', message: expect.any(String) },
    ]);
    expect(store.replaceRules([modRule('a', 'x', { executionTier: 9 })], [kept, replaced])).toEqual([]);
    const rules = store.snapshot().rulesFor('a');
    expect(rules.map((r) => [r.name, r.tier])).toEqual([
      ['kept', 3],
      ['x', 9],
    ]);
    expect(rules[0]).toBe(kept);
    expect(store.allRules()).toEqual(expect.arrayContaining([...rules]));
    expect(store.allRules()).toHaveLength(2);
  });

  test('the cluster namespace is configurable', () => {
    const store = new RuleStore({ clusterNamespace: 'platform' });
    store.upsertRule(modRule('platform', 'p', { targetNamespaceRegex: '.*' }));
    store.upsertRule(modRule('kubemod-system', 'k', { targetNamespaceRegex: '.*' }));
    expect(names(store.snapshot().rulesFor('apps'))).toEqual(['platform/p']);
    expect(store.snapshot().clusterNamespace).toBe('platform');
  });

  test('namespace and node manifests are kept without managedFields and last-applied', () => {
    const store = new RuleStore();
    const ns = loadFixture('namespace');
    (ns.metadata as JsonObject).managedFields = [{ manager: 'kubectl' }];
    (ns.metadata as JsonObject).annotations = {
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
      keep: 'me',
    };
    store.upsertNamespace(ns);
    const kept = store.snapshot().namespace('default') as JsonObject;
    expect(kept.metadata).not.toHaveProperty('managedFields');
    expect((kept.metadata as JsonObject).annotations).toEqual({ keep: 'me' });
    expect((kept.metadata as JsonObject).labels).toEqual((ns.metadata as JsonObject).labels);
    store.replaceNamespaces([]);
    expect(store.snapshot().namespace('default')).toBeUndefined();
    store.replaceNodes([loadFixture('node')]);
    store.deleteNode('worker-1');
    expect(store.snapshot().node('worker-1')).toBeUndefined();
  });

  test('onChange fires on every change until unsubscribed; a throwing listener is contained', () => {
    const store = new RuleStore();
    let calls = 0;
    const off = store.onChange(() => calls++);
    store.onChange(() => {
      throw new Error('listener bug');
    });
    store.upsertRule(modRule('ns', 'a'));
    store.deleteRule('ns', 'a');
    store.deleteRule('ns', 'a'); // nothing to delete: no change
    store.upsertNamespace(loadFixture('namespace'));
    expect(calls).toBe(3);
    off();
    store.deleteNamespace('default');
    expect(calls).toBe(3);
  });

  describe('targetNamespaceSelector: cluster-wide rules chosen by Namespace labels', () => {
    const namespaceObj = (name: string, labels: Record<string, string>): JsonObject => {
      const ns = loadFixture('namespace');
      const meta = ns.metadata as JsonObject;
      meta.name = name;
      meta.labels = { 'kubernetes.io/metadata.name': name, ...labels };
      return ns;
    };
    const pci = { matchLabels: { compliance: 'pci' } };

    function storeWithRules(): RuleStore {
      const store = new RuleStore();
      store.upsertRule(modRule('kubemod-system', 'pci', { targetNamespaceSelector: pci }));
      store.upsertRule(
        modRule('kubemod-system', 'prod-pci', {
          targetNamespaceRegex: '^prod-',
          targetNamespaceSelector: {
            matchExpressions: [
              { key: 'compliance', operator: 'In', values: ['pci', 'sox'] },
              { key: 'exempt', operator: 'DoesNotExist' },
            ],
          },
        }),
      );
      store.upsertRule(modRule('kubemod-system', 'every-ns', { targetNamespaceSelector: {} }));
      store.upsertRule(modRule('kubemod-system', 'all', { targetNamespaceRegex: '.*' }));
      store.upsertRule(
        modRule('kubemod-system', 'all-labelled', {
          targetNamespaceRegex: '.*',
          targetNamespaceSelector: pci,
        }),
      );
      store.upsertNamespace(namespaceObj('prod-payments', { compliance: 'pci' }));
      store.upsertNamespace(namespaceObj('prod-exempt', { compliance: 'pci', exempt: 'yes' }));
      store.upsertNamespace(namespaceObj('dev-payments', { compliance: 'pci' }));
      store.upsertNamespace(namespaceObj('prod-web', {}));
      return store;
    }

    test('selector and regex must both match; {} selects every known namespace; cluster-scoped gets none', () => {
      const snap = storeWithRules().snapshot();
      expect(names(snap.rulesFor('prod-payments'))).toEqual([
        'kubemod-system/all',
        'kubemod-system/all-labelled',
        'kubemod-system/every-ns',
        'kubemod-system/pci',
        'kubemod-system/prod-pci',
      ]);
      expect(names(snap.rulesFor('prod-exempt'))).toEqual([
        'kubemod-system/all',
        'kubemod-system/all-labelled',
        'kubemod-system/every-ns',
        'kubemod-system/pci',
      ]);
      expect(names(snap.rulesFor('dev-payments'))).toEqual([
        'kubemod-system/all',
        'kubemod-system/all-labelled',
        'kubemod-system/every-ns',
        'kubemod-system/pci',
      ]);
      expect(names(snap.rulesFor('prod-web'))).toEqual(['kubemod-system/all', 'kubemod-system/every-ns']);
      // A namespace the store has no manifest for: no labels to match, so only the regex-only rule applies.
      expect(names(snap.rulesFor('unknown'))).toEqual(['kubemod-system/all']);
      // Cluster-scoped objects: `.*` matches "", but a selector never matches (no Namespace, no labels).
      expect(names(snap.rulesFor(null))).toEqual(['kubemod-system/all']);
      // Objects in the cluster namespace get all its rules, as with targetNamespaceRegex.
      expect(snap.rulesFor('kubemod-system')).toHaveLength(5);
    });

    test('a label change recomputes that namespace only; other namespaces keep their memoized lists', () => {
      const store = storeWithRules();
      const first = store.snapshot();
      const web = first.rulesFor('prod-web');
      const payments = first.rulesFor('prod-payments');
      const cluster = first.rulesFor(null);
      store.upsertNamespace(namespaceObj('prod-web', { compliance: 'sox' }));
      const second = store.snapshot();
      expect(names(second.rulesFor('prod-web'))).toEqual([
        'kubemod-system/all',
        'kubemod-system/every-ns',
        'kubemod-system/prod-pci',
      ]);
      expect(second.rulesFor('prod-payments')).toBe(payments);
      expect(second.rulesFor(null)).toBe(cluster);
      expect(names(first.rulesFor('prod-web'))).toEqual(names(web)); // the old snapshot never changes
      // An update that leaves the labels alone (an annotation) keeps every list, the changed one included.
      const annotated = namespaceObj('prod-web', { compliance: 'sox' });
      (annotated.metadata as JsonObject).annotations = { owner: 'web-team' };
      const sox = second.rulesFor('prod-web');
      store.upsertNamespace(annotated);
      store.upsertNode(loadFixture('node'));
      expect(store.snapshot()).not.toBe(second);
      expect(store.snapshot().rulesFor('prod-web')).toBe(sox);
      // Deleting the Namespace and a relist that drops a label are label changes too.
      store.deleteNamespace('prod-web');
      expect(names(store.snapshot().rulesFor('prod-web'))).toEqual(['kubemod-system/all']);
      const third = store.snapshot();
      const dev = third.rulesFor('dev-payments');
      store.replaceNamespaces([
        namespaceObj('prod-payments', { compliance: 'pci' }),
        namespaceObj('dev-payments', {}),
      ]);
      expect(store.snapshot().rulesFor('prod-payments')).toBe(third.rulesFor('prod-payments'));
      expect(store.snapshot().rulesFor('dev-payments')).not.toBe(dev);
      expect(names(store.snapshot().rulesFor('dev-payments'))).toEqual([
        'kubemod-system/all',
        'kubemod-system/every-ns',
      ]);
    });

    test('a rule change recomputes every namespace', () => {
      const store = storeWithRules();
      const before = store.snapshot().rulesFor('prod-payments');
      store.deleteRule('kubemod-system', 'pci');
      const after = store.snapshot().rulesFor('prod-payments');
      expect(after).not.toBe(before);
      expect(names(after)).not.toContain('kubemod-system/pci');
    });

    test('an invalid selector is rejected with the field path', () => {
      const store = new RuleStore();
      const problems = store.upsertRule(
        modRule('kubemod-system', 'bad', {
          targetNamespaceSelector: { matchExpressions: [{ key: 'env', operator: 'Exists', values: ['x'] }] },
        }),
      );
      expect(problems.map((p) => p.field)).toEqual([
        'spec.targetNamespaceSelector.matchExpressions[0].values',
      ]);
      expect(store.snapshot().ruleCount).toBe(0);
    });
  });
});
