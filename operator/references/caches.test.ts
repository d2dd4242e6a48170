import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { cronJobChain, deploymentChain } from '../../fixtures/owners';
import { CompiledRule } from '../../rule/compile';
import { RuleStore } from '../../store/rules';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { createKubeClient } from '../../kube/kube';
import { ReferenceCaches } from './caches';

const rule = (namespace: string, name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace },
  spec: { type: 'Patch', patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }], ...spec },
});

const mirrorRule = (name = 'mirror') =>
  rule('kubemod-system', name, {
    targetNamespaceRegex: '.*',
    references: [
      { name: 'mirror', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'platform', objectName: 'mirror' },
    ],
    match: [{ select: '$.syntheticRefs.mirror.data.host' }],
  });

const ownerRule = (fields = 'metadata.labels.team') =>
  rule('kubemod-system', 'owner', {
    targetNamespaceRegex: '.*',
    match: [{ select: `$.syntheticRefs.owner.syntheticRefs.owner.${fields}` }],
  });

const cm = (namespace: string, name: string, data: Record<string, string> = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});

/** Points the controller reference of `obj` at `owner` as stored (the fake gives objects uids of its own). */
function ownedBy(obj: JsonObject, owner: JsonObject): JsonObject {
  const meta = obj.metadata as JsonObject;
  const [ref] = meta.ownerReferences as JsonObject[];
  const uid = (owner.metadata as JsonObject).uid;
  return { ...obj, metadata: { ...meta, ownerReferences: [{ ...ref, uid }] } };
}

describe('ReferenceCaches', () => {
  let fake: FakeApiServer;
  let store: RuleStore;
  let caches: ReferenceCaches;
  let statusChanges = 0;

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    store = new RuleStore({ keepSource: false });
    statusChanges = 0;
    caches = new ReferenceCaches({
      client: createKubeClient(fake.access()),
      logger: silentLogger(),
      store,
    });
    caches.onStatusChange(() => statusChanges++);
    caches.start();
  });
  afterEach(async () => {
    await caches.stop();
    await fake.close();
  });

  const rules = (): CompiledRule[] => store.allRules();
  const pod = deploymentChain('shop').pod;
  const ready = async () => {
    const wait = caches.pending(rules(), pod, 'shop');
    if (wait) await wait;
    return caches.pending(rules(), pod, 'shop');
  };

  test('a request waits for the first list; edits and deletion follow; the status names what is missing', async () => {
    fake.put('configmaps', cm('platform', 'mirror', { host: 'one.example.com' }));
    for (let i = 0; i < 20; i++) fake.put('configmaps', cm('platform', `other-${i}`));
    store.upsertRule(mirrorRule());
    expect(caches.pending(rules(), pod, 'shop')).toBeInstanceOf(Promise);
    expect(await ready()).toBeUndefined();
    const host = () => (caches.reader.get('', 'ConfigMap', 'platform', 'mirror')?.data as JsonObject)?.host;
    expect(host()).toBe('one.example.com');
    // Only the object rules name is held, not the namespace's other ConfigMaps.
    expect(caches.reader.counts().get('/ConfigMap')).toBe(1);
    fake.put('configmaps', cm('platform', 'mirror', { host: 'two.example.com' }));
    await eventually(() => host() === 'two.example.com');
    expect(caches.problemsOf(store.ruleOf('kubemod-system', 'mirror')!)).toEqual([]);
    fake.remove('configmaps', 'platform', 'mirror');
    await eventually(() => host() === undefined);
    expect(caches.problemsOf(store.ruleOf('kubemod-system', 'mirror')!)).toEqual([
      'syntheticRefs.mirror: ConfigMap platform/mirror not found',
    ]);
    await eventually(() => statusChanges > 0);
  });

  test('1,000 rules naming one ConfigMap: one watch, one object', async () => {
    fake.put('configmaps', cm('platform', 'mirror', { host: 'x' }));
    for (let i = 0; i < 1000; i++) store.upsertRule(mirrorRule(`mirror-${i}`));
    expect(await ready()).toBeUndefined();
    expect(caches.reader.counts().get('/ConfigMap')).toBe(1);
    const lists = fake
      .requestsTo('GET', '/api/v1/namespaces/platform/configmaps')
      .filter((r) => !r.query.watch);
    expect(lists).toHaveLength(1);
  });

  test('a new name in a watched namespace lists again; the rules already served keep their answer meanwhile', async () => {
    fake.put('configmaps', cm('platform', 'mirror', { host: 'x' }));
    fake.put('configmaps', cm('platform', 'quota', { cpu: '2' }));
    store.upsertRule(mirrorRule());
    await ready();
    store.upsertRule(
      rule('kubemod-system', 'quota', {
        references: [
          { name: 'q', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'platform', objectName: 'quota' },
        ],
        match: [{ select: '$.syntheticRefs.q.data.cpu' }],
      }),
    );
    expect(caches.pending([store.ruleOf('kubemod-system', 'mirror')!], pod, 'shop')).toBeUndefined();
    expect(caches.pending(rules(), pod, 'shop')).toBeInstanceOf(Promise);
    expect(await ready()).toBeUndefined();
    expect(caches.reader.counts().get('/ConfigMap')).toBe(2);
  });

  test('owners: started on first need, two levels, metadata only when rules read only metadata', async () => {
    const chain = deploymentChain('shop');
    const deployment = fake.put('deployments', chain.deployment);
    const replicaSet = fake.put('replicasets', ownedBy(chain.replicaSet, deployment));
    const owned = ownedBy(chain.pod, replicaSet);
    store.upsertRule(ownerRule());
    const wait = caches.pending(rules(), owned, 'shop');
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    expect(caches.pending(rules(), owned, 'shop')).toBeUndefined();
    const rs = caches.reader.get('apps', 'ReplicaSet', 'shop', 'web-7d9f8c6b5');
    expect(rs?.metadata).toMatchObject({ name: 'web-7d9f8c6b5' });
    expect(rs?.spec).toBeUndefined();
    expect(caches.reader.get('apps', 'Deployment', 'shop', 'web')).toBeDefined();
  });

  test('a rule reading more than metadata of owners makes the owner caches list whole objects again', async () => {
    const chain = deploymentChain('shop');
    const deployment = fake.put('deployments', chain.deployment);
    const replicaSet = fake.put('replicasets', ownedBy(chain.replicaSet, deployment));
    const owned = ownedBy(chain.pod, replicaSet);
    store.upsertRule(ownerRule());
    await caches.pending(rules(), owned, 'shop');
    expect(caches.reader.get('apps', 'ReplicaSet', 'shop', 'web-7d9f8c6b5')?.spec).toBeUndefined();
    store.upsertRule(
      rule('kubemod-system', 'replicas', {
        targetNamespaceRegex: '.*',
        match: [{ select: '$.syntheticRefs.owner.spec.replicas' }],
      }),
    );
    const wait = caches.pending(rules(), owned, 'shop');
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    expect(caches.reader.get('apps', 'ReplicaSet', 'shop', 'web-7d9f8c6b5')?.spec).toMatchObject({
      replicas: 2,
    });
  });

  test('an owner the watch has not delivered yet is read once from the API server', async () => {
    const chain = deploymentChain('shop');
    const deployment = fake.put('deployments', chain.deployment);
    store.upsertRule(ownerRule('spec.replicas'));
    expect(await ready()).toBeUndefined();
    // Watches of ReplicaSets now fail: the new ReplicaSet reaches the cache only through the miss.
    fake.interceptor = (r) =>
      r.query.watch && r.path.endsWith('/replicasets') ? { status: 500 } : undefined;
    fake.dropWatches();
    const replicaSet = fake.put('replicasets', ownedBy(chain.replicaSet, deployment));
    const fresh = ownedBy(chain.pod, replicaSet);
    const gets = () =>
      fake.requestsTo('GET', '/apis/apps/v1/namespaces/shop/replicasets/web-7d9f8c6b5').length;
    const before = gets();
    const wait = caches.pending(rules(), fresh, 'shop');
    expect(wait).toBeInstanceOf(Promise);
    await wait;
    expect(caches.reader.get('apps', 'ReplicaSet', 'shop', 'web-7d9f8c6b5')?.spec).toMatchObject({
      replicas: 2,
    });
    expect(caches.pending(rules(), fresh, 'shop')).toBeUndefined();
    expect(gets() - before).toBe(1);
  });

  test('an owner kind the operator may not read, or is not told to read: absent, and the status says why', async () => {
    const { cronJob, job: unowned } = cronJobChain('shop');
    const job = ownedBy(unowned, fake.put('cronjobs', cronJob));
    fake.interceptor = (r) =>
      r.path.endsWith('/cronjobs') ? { status: 403, message: 'cronjobs is forbidden' } : undefined;
    store.upsertRule(ownerRule());
    const wait = caches.pending(rules(), job, 'shop');
    await wait;
    expect(caches.pending(rules(), job, 'shop')).toBeUndefined();
    const owned = {
      ...job,
      metadata: {
        ...(job.metadata as JsonObject),
        ownerReferences: [
          { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'u', controller: true },
        ],
      },
    };
    expect(caches.pending(rules(), owned, 'shop')).toBeUndefined();
    const problems = caches.problemsOf(store.ruleOf('kubemod-system', 'owner')!);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^syntheticRefs\.owner: .*cronjobs is forbidden/);
    expect(problems[1]).toBe('syntheticRefs.owner: owners of kind Widget are not read (--owner-kinds)');
  });

  test('a referenced object of 1 MiB is held like any other', async () => {
    const data: Record<string, string> = {};
    for (let i = 0; i < 1024; i++) data[`key-${i}`] = 'x'.repeat(1024);
    fake.put('configmaps', cm('platform', 'mirror', data));
    store.upsertRule(mirrorRule());
    expect(await ready()).toBeUndefined();
    const held = caches.reader.get('', 'ConfigMap', 'platform', 'mirror');
    expect(Object.keys(held?.data as JsonObject)).toHaveLength(1024);
  });

  test('a watch no rule needs is stopped and its objects dropped', async () => {
    fake.put('configmaps', cm('platform', 'mirror', { host: 'x' }));
    store.upsertRule(mirrorRule());
    await ready();
    expect(caches.reader.counts().get('/ConfigMap')).toBe(1);
    store.deleteRule('kubemod-system', 'mirror');
    expect(caches.pending(rules(), pod, 'shop')).toBeUndefined();
    expect(caches.reader.counts().get('/ConfigMap')).toBe(0);
    await eventually(() => fake.openWatches === 0);
  });
});
