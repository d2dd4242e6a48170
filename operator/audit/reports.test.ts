import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { storeFromYaml } from '../../engine/testing';
import { PARTIAL_ANNOTATION, ReportBuilder } from '../../audit/report';
import { CORE_RESOURCES, FakeCluster } from '../testing/fake-cluster';
import { eventually } from '../testing/eventually';
import { KubeApiError } from '../../kube/kube';
import { BackgroundAudit, ScanRound } from './background';
import { RateLimiter } from './rate';
import { ReportWriter } from './reports';

const REPORTS = '/apis/openreports.io/v1alpha1/namespaces';

function builderFor(namespaces: Record<string, string[]>): ReportBuilder {
  const b = new ReportBuilder();
  for (const [ns, names] of Object.entries(namespaces))
    for (const name of names)
      b.add({
        ref: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          namespace: ns,
          name,
          uid: `u-${name}`,
          resourceVersion: '1',
        },
        verdict: 'patch',
        patch: [{ op: 'add', path: '/metadata/labels/a', value: 'b' }],
        message: '',
        rules: [{ rule: { namespace: ns || 'kubemod-system', name: 'r' }, type: 'Patch', verdict: 'patch' }],
      });
  return b;
}

const writer = (c: FakeCluster) =>
  new ReportWriter({ client: c, format: 'openreports', logger: silentLogger() });
const writes = (c: FakeCluster) =>
  c.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`);

describe('ReportWriter', () => {
  it('creates one report per namespace and a cluster report, and writes nothing when nothing changed', async () => {
    const c = new FakeCluster();
    expect(await writer(c).write(builderFor({ shop: ['a', 'b'], '': ['ns'] }))).toEqual({
      written: 2,
      unchanged: 0,
      deleted: 0,
      failed: 0,
    });
    expect(writes(c)).toEqual([
      'POST /apis/openreports.io/v1alpha1/clusterreports',
      `POST ${REPORTS}/shop/reports`,
    ]);
    expect(c.get('Report', 'shop', 'modrule-audit')!.summary).toMatchObject({ fail: 2 });
    c.requests.length = 0;
    expect(await writer(c).write(builderFor({ shop: ['a', 'b'], '': ['ns'] }))).toMatchObject({
      written: 0,
      unchanged: 2,
    });
    expect(writes(c)).toEqual([]);
  });

  it('replaces a report that changed, and deletes reports of namespaces with nothing left (after a complete scan)', async () => {
    const c = new FakeCluster();
    await writer(c).write(builderFor({ shop: ['a'], bank: ['x'] }));
    c.requests.length = 0;
    expect(await writer(c).write(builderFor({ shop: ['a', 'b'] }), 'stopped after 2 objects')).toMatchObject({
      written: 1,
      deleted: 0,
    });
    expect(
      ((c.get('Report', 'shop', 'modrule-audit')!.metadata as JsonObject).annotations as JsonObject)[
        PARTIAL_ANNOTATION
      ],
    ).toBe('stopped after 2 objects');
    expect(c.get('Report', 'bank', 'modrule-audit')).toBeDefined();
    c.requests.length = 0;
    expect(await writer(c).write(builderFor({ shop: ['a', 'b'] }))).toMatchObject({ written: 1, deleted: 1 });
    expect(writes(c)).toEqual([
      `PUT ${REPORTS}/shop/reports/modrule-audit`,
      `DELETE ${REPORTS}/bank/reports/modrule-audit`,
    ]);
    expect(c.get('Report', 'bank', 'modrule-audit')).toBeUndefined();
  });

  it('says what to install when the report CRDs are missing', async () => {
    const c = new FakeCluster(CORE_RESOURCES.filter((r) => r.group !== 'openreports.io'));
    await expect(writer(c).write(builderFor({ shop: ['a'] }))).rejects.toThrow(
      'reports.openreports.io is not served: install the report CRDs (config/reports/openreports, docs/audit.md) ' +
        'or run the operator without --reports',
    );
  });

  it('reads again after a conflict with another replica, and goes on past a report it cannot write', async () => {
    const c = new FakeCluster();
    await writer(c).write(builderFor({ shop: ['a'], bank: ['x'] }));
    let once = true;
    c.hooks.push((req, cluster) => {
      if (req.method === 'PUT' && req.path.includes('/shop/') && once) {
        once = false;
        cluster.put(cluster.get('Report', 'shop', 'modrule-audit')!); // another replica wrote it
      }
      if (req.method === 'PUT' && req.path.includes('/bank/'))
        throw new KubeApiError('403 Forbidden: namespace bank is being terminated', 403, 'Forbidden');
    });
    expect(await writer(c).write(builderFor({ shop: ['a', 'b'], bank: ['x', 'y'] }))).toMatchObject({
      written: 1,
      failed: 1,
    });
    expect(c.get('Report', 'shop', 'modrule-audit')!.summary).toMatchObject({ fail: 2 });
  });
});

describe('BackgroundAudit', () => {
  function setUp() {
    const c = new FakeCluster();
    c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    c.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'shop', labels: { team: 'x' } },
    });
    const store = storeFromYaml([], { cluster: c.all('Namespace') });
    store.upsertRule(ruleObject('x'));
    const rounds: ScanRound[] = [];
    const audit = new BackgroundAudit(
      { format: 'openreports', intervalSeconds: 3600, debounceMs: 10, pageSize: 10, qps: 1000 },
      {
        client: c,
        store,
        logger: silentLogger(),
        rulesLoaded: Promise.resolve(),
        onRound: (r) => rounds.push(r),
      },
    );
    return { c, store, audit, rounds };
  }

  it('scans after the first sync, again after a rule changes, and not for other store changes', async () => {
    const { c, store, audit, rounds } = setUp();
    audit.start();
    try {
      await eventually(() => expect(rounds).toHaveLength(1));
      expect(c.get('Report', 'shop', 'modrule-audit')!.summary).toMatchObject({ pass: 1, fail: 0 });
      // A Namespace update is not a rule change: no scan.
      store.upsertNamespace({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'shop', labels: { a: 'b' } },
      });
      await new Promise((r) => setTimeout(r, 100));
      expect(rounds).toHaveLength(1);
      expect(store.upsertRule(ruleObject('y'))).toEqual([]);
      await eventually(() => expect(rounds).toHaveLength(2));
      expect(c.get('Report', 'shop', 'modrule-audit')!.summary).toMatchObject({ pass: 0, fail: 1 });
    } finally {
      await audit.stop();
    }
  });

  it('never runs two scans at once: triggers during a scan ask for one more after it', async () => {
    const { c, audit, rounds } = setUp();
    let inFlight = 0;
    let most = 0;
    c.hooks.push(async (req) => {
      if (!req.path.endsWith('/configmaps')) return;
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 30));
      inFlight--;
    });
    audit.start();
    try {
      await eventually(() => expect(c.requests.some((r) => r.path.endsWith('/configmaps'))).toBe(true));
      audit.trigger();
      audit.trigger();
      audit.trigger();
      await eventually(() => expect(rounds.length).toBeGreaterThanOrEqual(2));
      await new Promise((r) => setTimeout(r, 100));
      expect(rounds).toHaveLength(2);
      expect(most).toBe(1);
    } finally {
      await audit.stop();
    }
  });

  it('stops a running scan on stop()', async () => {
    const { c, audit, rounds } = setUp();
    c.hooks.push(async (req) => {
      if (req.path.endsWith('/configmaps')) await new Promise((r) => setTimeout(r, 200));
    });
    audit.start();
    await eventually(() => expect(c.requests.some((r) => r.path.endsWith('/configmaps'))).toBe(true));
    const t0 = Date.now();
    await audit.stop();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(rounds).toHaveLength(0);
    expect(c.get('Report', 'shop', 'modrule-audit')).toBeUndefined();
  });
});

function ruleObject(value: string): JsonObject {
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'team', namespace: 'shop' },
    spec: {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
      patch: [{ op: 'add', path: '/metadata/labels/team', value }],
    },
  };
}

describe('RateLimiter', () => {
  it('lets a burst through, then one call per 1/qps seconds', async () => {
    let now = 0;
    const limiter = new RateLimiter(10, 2, () => now);
    await limiter.take();
    await limiter.take();
    let third = false;
    const pending = limiter.take().then(() => (third = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(third).toBe(false);
    now = 100; // 0.1 s later: one more token
    await pending;
    expect(third).toBe(true);
    expect(() => new RateLimiter(0)).toThrow(/qps must be positive/);
  });
});
