import { loadFixture } from '../../fixtures/load';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { RuleStore } from '../../store/rules';
import { createKubeClient } from '../../kube/kube';
import { StatusReporter } from '../status/reporter';
import { ClusterSync } from './sync';
import { eventually } from '../testing/eventually';
import { useClusterSync } from '../testing/cluster-sync';
import { FakeApiServer } from '../testing/fake-apiserver';
import { brokenRule, labelRule, namespace, node } from '../testing/objects';

function ruleNames(store: RuleStore, ns: string): string[] {
  return store
    .snapshot()
    .rulesFor(ns)
    .map((r) => `${r.namespace}/${r.name}`)
    .sort();
}

function readyOf(obj: JsonObject | undefined): JsonObject | undefined {
  const status = obj?.status as JsonObject | undefined;
  return (status?.conditions as JsonObject[] | undefined)?.find((c) => c.type === 'Ready');
}

describe('ClusterSync: the cluster into the rule store', () => {
  const harness = useClusterSync();
  let api: FakeApiServer;
  let store: RuleStore;
  let sync: ClusterSync;
  let status: StatusReporter;
  beforeEach(() => ({ api, store, sync, status } = harness));

  async function started(): Promise<void> {
    sync.start();
    await sync.synced;
    await eventually(() => api.openWatches === 3);
  }

  it('is not ready until ModRules, Namespaces and Nodes have all been listed', async () => {
    let nodesBlocked = true;
    api.interceptor = (r) => (nodesBlocked && r.path === '/api/v1/nodes' ? { status: 503 } : undefined);
    sync.start();
    await eventually(() => api.requestsTo('GET', '/api/v1/nodes').length >= 2);
    expect(api.requestsTo('GET', '/api/v1/namespaces').length).toBeGreaterThan(0);
    expect(sync.isReady()).toBe(false);
    nodesBlocked = false;
    await sync.synced;
    expect(sync.isReady()).toBe(true);
  });

  it('loads existing rules, namespaces and nodes, then follows adds, updates and deletes', async () => {
    api.put('modrules', labelRule('team-a', 'one'));
    api.put('namespaces', loadFixture('namespace'));
    api.put('nodes', loadFixture('node'));
    await started();
    expect(ruleNames(store, 'team-a')).toEqual(['team-a/one']);
    const nsName = String((loadFixture('namespace').metadata as JsonObject).name);
    const nodeName = String((loadFixture('node').metadata as JsonObject).name);
    expect(store.snapshot().namespace(nsName)).toMatchObject({ apiVersion: 'v1', kind: 'Namespace' });
    expect(store.snapshot().node(nodeName)).toMatchObject({ kind: 'Node' });

    api.put('modrules', labelRule('team-a', 'two'));
    await eventually(() => ruleNames(store, 'team-a').length === 2);
    const updated = labelRule('team-a', 'one', 'changed');
    api.put('modrules', updated);
    await eventually(() => {
      const rule = store
        .snapshot()
        .rulesFor('team-a')
        .find((r) => r.name === 'one');
      return JSON.stringify(rule?.source?.spec).includes('changed');
    });
    api.remove('modrules', 'team-a', 'two');
    await eventually(() => ruleNames(store, 'team-a').join() === 'team-a/one');

    api.put('namespaces', namespace('fresh', { color: 'blue' }));
    await eventually(() => store.snapshot().namespace('fresh') !== undefined);
    api.remove('namespaces', null, nsName);
    await eventually(() => store.snapshot().namespace(nsName) === undefined);
    api.put('nodes', node('worker-2'));
    api.remove('nodes', null, nodeName);
    await eventually(
      () => store.snapshot().node('worker-2') !== undefined && store.snapshot().node(nodeName) === undefined,
    );
  });

  it('recovers from an outage with 410 Gone: a rule deleted meanwhile is gone, one added is there', async () => {
    api.put('modrules', labelRule('team-a', 'doomed'));
    api.put('modrules', labelRule('team-a', 'stays'));
    await started();
    await api.goDown();
    api.remove('modrules', 'team-a', 'doomed');
    api.put('modrules', labelRule('team-b', 'added-while-down'));
    api.remove('nodes', null, 'none');
    api.compact();
    await new Promise((r) => setTimeout(r, 50));
    expect(ruleNames(store, 'team-a')).toEqual(['team-a/doomed', 'team-a/stays']); // stale until reconnect
    await api.comeUp();
    await eventually(() => ruleNames(store, 'team-a').join() === 'team-a/stays');
    await eventually(() => ruleNames(store, 'team-b').join() === 'team-b/added-while-down');
    expect(sync.isReady()).toBe(true);
  });

  it('skips an invalid rule, sets Ready=False with the field path and emits one Warning event', async () => {
    api.put('modrules', brokenRule('team-a', 'broken'));
    api.put('modrules', labelRule('team-a', 'fine'));
    await started();
    expect(ruleNames(store, 'team-a')).toEqual(['team-a/fine']);
    await eventually(() => readyOf(api.get('modrules', 'team-a', 'broken')) !== undefined);
    const broken = api.get('modrules', 'team-a', 'broken');
    expect(readyOf(broken)).toMatchObject({
      status: 'False',
      reason: 'Invalid',
      observedGeneration: 1,
      message: expect.stringContaining('spec.match[0].matchRegex'),
    });
    expect((broken?.status as JsonObject).observedGeneration).toBe(1);
    await eventually(() => readyOf(api.get('modrules', 'team-a', 'fine'))?.status === 'True');
    expect(readyOf(api.get('modrules', 'team-a', 'fine'))).toMatchObject({
      reason: 'Valid',
      observedGeneration: 1,
    });
    await eventually(() => api.list('events').length === 1);
    expect(api.list('events')[0]).toMatchObject({
      type: 'Warning',
      reason: 'InvalidModRule',
      involvedObject: { kind: 'ModRule', name: 'broken', namespace: 'team-a' },
    });
  });

  it('does not loop on its own status writes, and rewrites only when the rule changes', async () => {
    api.put('modrules', labelRule('team-a', 'fine'));
    await started();
    await eventually(() => readyOf(api.get('modrules', 'team-a', 'fine')) !== undefined);
    await new Promise((r) => setTimeout(r, 200));
    await status.idle();
    const statusPath = '/apis/api.kubemod.io/v1beta1/namespaces/team-a/modrules/fine/status';
    expect(api.requestsTo('PATCH', statusPath)).toHaveLength(1);
    const firstTransition = readyOf(api.get('modrules', 'team-a', 'fine'))?.lastTransitionTime;

    // Breaking the rule flips Ready to False with a new generation.
    const broken = brokenRule('team-a', 'fine');
    api.put('modrules', broken);
    await eventually(() => readyOf(api.get('modrules', 'team-a', 'fine'))?.status === 'False');
    expect(readyOf(api.get('modrules', 'team-a', 'fine'))).toMatchObject({ observedGeneration: 2 });
    expect(ruleNames(store, 'team-a')).toEqual([]);
    // A relist (410) re-reports every rule: nothing changed, so nothing is written.
    api.dropWatches();
    api.compact();
    await eventually(
      () =>
        api.requestsTo('GET', '/apis/api.kubemod.io/v1beta1/modrules').filter((r) => !r.query.watch)
          .length === 2,
    );
    await new Promise((r) => setTimeout(r, 100));
    await status.idle();
    expect(api.requestsTo('PATCH', statusPath)).toHaveLength(2);
    expect(firstTransition).toEqual(expect.any(String));
  });

  it('two replicas write the same status and create the event only once', async () => {
    api.put('modrules', brokenRule('team-a', 'broken'));
    const client = createKubeClient(api.access());
    const status2 = new StatusReporter({ client, logger: silentLogger() });
    const sync2 = new ClusterSync({
      client,
      store: new RuleStore(),
      logger: silentLogger(),
      status: status2,
    });
    try {
      sync.start();
      sync2.start();
      await Promise.all([sync.synced, sync2.synced]);
      await eventually(() => readyOf(api.get('modrules', 'team-a', 'broken'))?.status === 'False');
      await new Promise((r) => setTimeout(r, 200));
      await Promise.all([status.idle(), status2.idle()]);
      expect(api.list('events')).toHaveLength(1);
      expect(api.requestsTo('PATCH', /\/status$/).length).toBeLessThanOrEqual(2);
    } finally {
      await sync2.stop();
      await status2.stop();
    }
  });
});
