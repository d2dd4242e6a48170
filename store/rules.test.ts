import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../json/value';
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
});
