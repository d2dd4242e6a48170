// targetNamespaceSelector through the informer path: Namespace label changes arrive as watch events and must
// change which cluster-wide rules apply to that namespace, and only to it.
import { JsonObject } from '../../util/json';
import { RuleStore } from '../../store/rules';
import { ClusterSync } from './sync';
import { eventually } from '../testing/eventually';
import { useClusterSync } from '../testing/cluster-sync';
import { FakeApiServer } from '../testing/fake-apiserver';
import { modRule, namespace } from '../testing/objects';

const pciRule = modRule('kubemod-system', 'pci-only', {
  type: 'Reject',
  targetNamespaceSelector: { matchExpressions: [{ key: 'compliance', operator: 'In', values: ['pci'] }] },
  match: [{ select: '$.kind', matchValue: 'Pod' }],
  rejectMessage: 'no bare Pods in PCI namespaces',
});

describe('ClusterSync: Namespace labels choose cluster-wide rules (targetNamespaceSelector)', () => {
  const harness = useClusterSync();
  let api: FakeApiServer;
  let store: RuleStore;
  let sync: ClusterSync;
  beforeEach(() => ({ api, store, sync } = harness));

  const applies = (ns: string): boolean =>
    store
      .snapshot()
      .rulesFor(ns)
      .some((r) => r.name === 'pci-only');

  it('a label added, changed or removed on a Namespace re-selects the rules of that namespace only', async () => {
    api.put('modrules', pciRule);
    api.put('namespaces', namespace('payments', { compliance: 'pci' }));
    api.put('namespaces', namespace('web', {}));
    api.put('namespaces', namespace('batch', { team: 'data' }));
    sync.start();
    await sync.synced;
    await eventually(() => api.openWatches === 3);

    expect(applies('payments')).toBe(true);
    expect(applies('web')).toBe(false);
    const batch = store.snapshot().rulesFor('batch');
    const payments = store.snapshot().rulesFor('payments');

    api.put('namespaces', namespace('web', { compliance: 'pci' }));
    await eventually(() => applies('web'));
    // The other namespaces kept their memoized lists: nothing about them changed.
    expect(store.snapshot().rulesFor('batch')).toBe(batch);
    expect(store.snapshot().rulesFor('payments')).toBe(payments);

    api.put('namespaces', namespace('payments', { compliance: 'none' }));
    await eventually(() => !applies('payments'));
    expect(applies('web')).toBe(true);
    expect(store.snapshot().rulesFor('batch')).toBe(batch);

    api.remove('namespaces', null, 'web');
    await eventually(() => !applies('web'));
    // Cluster-scoped objects never get a selector rule.
    expect(
      store
        .snapshot()
        .rulesFor(null)
        .map((r) => r.name),
    ).toEqual([]);
  });

  it('an invalid selector is skipped and reported with its field path', async () => {
    const bad = modRule('kubemod-system', 'bad-selector', {
      ...(pciRule.spec as JsonObject),
      targetNamespaceSelector: { matchExpressions: [{ key: 'compliance', operator: 'In' }] },
    });
    api.put('modrules', bad);
    sync.start();
    await sync.synced;
    await eventually(() => {
      const conditions = (
        api.get('modrules', 'kubemod-system', 'bad-selector')?.status as JsonObject | undefined
      )?.conditions as JsonObject[] | undefined;
      return String(conditions?.[0]?.message ?? '').includes(
        'spec.targetNamespaceSelector.matchExpressions[0].values',
      );
    });
    expect(store.snapshot().ruleCount).toBe(0);
  });
});
