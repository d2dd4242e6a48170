import { JsonObject } from '../../util/json';
import { storeFromYaml } from '../../engine/testing';
import { UNRESTRICTED } from '../../audit/dragnet';
import { planScan } from '../../audit/plan';
import { ObjectAudit } from '../../audit/types';
import { FakeCluster } from '../testing/fake-cluster';
import { KubeApiError } from '../../kube/kube';
import { discoverResources } from './discovery';
import { prepareScan } from './prepare';
import { RateLimiter } from './rate';
import { scanCluster } from './scan';

const rule = (name: string, namespace: string, kind: string) =>
  `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ${kind}}, {select: '$.metadata.labels.team', negate: true}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]`;

const configMap = (namespace: string, name: string, labels: Record<string, string> = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels },
  data: { a: 'b' },
});

function cluster(count: number): FakeCluster {
  const c = new FakeCluster();
  for (const ns of ['shop', 'bank']) c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (let i = 0; i < count; i++) {
    c.put(configMap('shop', `cm-${String(i).padStart(3, '0')}`, i % 2 ? { team: 'x' } : {}));
    c.put(configMap('bank', `cm-${i}`));
  }
  return c;
}

async function scan(c: FakeCluster, options: Partial<Parameters<typeof scanCluster>[0]> = {}) {
  const store = storeFromYaml([rule('team', 'shop', 'ConfigMap')], { cluster: c.all('Namespace') });
  const snapshot = store.snapshot();
  const prepared = await prepareScan(c, snapshot, {});
  const seen: ObjectAudit[] = [];
  const result = await scanCluster(
    { client: c, snapshot, plan: prepared.plan, scope: prepared.scope, ...options },
    (a) => {
      seen.push(a);
    },
  );
  return { result, seen, notes: prepared.notes };
}

describe('scanCluster', () => {
  it('lists only what the rules reach, page by page, and evaluates every object', async () => {
    const c = cluster(5);
    const { result, seen, notes } = await scan(c, { pageSize: 2 });
    const lists = c.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/configmaps'));
    expect(lists.map((r) => [r.path, r.query.limit, r.query.continue])).toEqual([
      ['/api/v1/namespaces/shop/configmaps', '2', undefined],
      ['/api/v1/namespaces/shop/configmaps', '2', '2'],
      ['/api/v1/namespaces/shop/configmaps', '2', '4'],
    ]);
    expect(result).toMatchObject({ listed: 5, evaluated: 5, complete: true, problems: [] });
    expect(result.verdicts).toEqual({ patch: 3, reject: 0, error: 0, pass: 2 });
    expect(seen.filter((a) => a.verdict === 'patch').map((a) => a.ref.name)).toEqual([
      'cm-000',
      'cm-002',
      'cm-004',
    ]);
    expect(seen[0].ref).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop' });
    expect(notes).toEqual([expect.stringContaining('does not exist: auditing every resource')]);
    // Read-only.
    expect(c.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('passes the label selector to the API server', async () => {
    const c = cluster(4);
    const { result } = await scan(c, { labelSelector: 'team=x' });
    expect(result.listed).toBe(2);
    expect(c.requests.find((r) => r.path.endsWith('/configmaps'))!.query.labelSelector).toBe('team=x');
  });

  it('goes on past a list it may not make, and says the result is partial', async () => {
    const c = cluster(3);
    c.hooks.push((req) => {
      if (req.path === '/api/v1/namespaces/shop/configmaps')
        throw new KubeApiError(
          '403 Forbidden: configmaps is forbidden: User "jane" cannot list',
          403,
          'Forbidden',
        );
    });
    const { result } = await scan(c);
    expect(result.complete).toBe(false);
    expect(result.problems).toEqual([
      expect.objectContaining({
        status: 403,
        message: expect.stringMatching(/^forbidden: cannot list configmaps in namespace shop: 403 Forbidden/),
      }),
    ]);
  });

  it('stops at its budget (objects, deadline, cancellation) with a partial result', async () => {
    const { result } = await scan(cluster(10), { maxObjects: 4, pageSize: 3 });
    expect(result).toMatchObject({
      listed: 4,
      complete: false,
      stopped: 'stopped after 4 objects (the budget of one scan)',
    });
    const late = await scan(cluster(3), { deadline: Date.now() - 1 });
    expect(late.result.stopped).toMatch(/time budget/);
    const controller = new AbortController();
    controller.abort();
    expect((await scan(cluster(3), { signal: controller.signal })).result.stopped).toBe('cancelled');
  });

  it('retries a list that fails for a moment (API server restarting)', async () => {
    const c = cluster(2);
    let failures = 1;
    c.hooks.push((req) => {
      if (req.path.endsWith('/configmaps') && failures-- > 0)
        throw new KubeApiError('503', 503, 'ServiceUnavailable');
    });
    const { result } = await scan(c);
    expect(result).toMatchObject({ listed: 2, complete: true });
  });

  it('lists a resource across all namespaces at once when many namespaces need it, keeping only those', async () => {
    const c = cluster(2);
    const store = storeFromYaml(
      [
        `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: wide, namespace: kubemod-system}
spec:
  type: Patch
  targetNamespaceRegex: '^shop$'
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]`,
      ],
      { cluster: c.all('Namespace') },
    );
    const plan = planScan(
      store.snapshot(),
      (await discoverResources(c)).resources,
      ['shop', 'bank'],
      UNRESTRICTED,
      {
        clusterWideAbove: 0,
      },
    );
    const seen: string[] = [];
    await scanCluster({ client: c, snapshot: store.snapshot(), plan, scope: UNRESTRICTED }, (a) => {
      seen.push(`${a.ref.namespace}/${a.ref.name}`);
    });
    expect(c.requests.filter((r) => r.path.endsWith('configmaps')).map((r) => r.path)).toEqual([
      '/api/v1/configmaps',
    ]);
    expect(seen).toEqual(['shop/cm-000', 'shop/cm-001']);
  });

  it('gives the event loop back every few milliseconds (the webhook shares it)', async () => {
    const c = cluster(1000);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const { result } = await scan(c, { pageSize: 1000, sliceMs: 1 });
    clearInterval(timer);
    expect(result.listed).toBe(1000);
    // The fake API server answers without any I/O: only the scan's own yields let the timer run.
    expect(ticks).toBeGreaterThan(3);
  });

  it('takes only its share of the event loop`s time when asked to (the background audit takes half)', async () => {
    const c = cluster(1000);
    const snapshot = storeFromYaml([rule('team', 'shop', 'ConfigMap')], {
      cluster: c.all('Namespace'),
    }).snapshot();
    const { plan, scope } = await prepareScan(c, snapshot, {});
    // 0.5 ms of work per object: 500 ms in all, whatever the machine.
    const work = () => {
      const end = performance.now() + 0.5;
      while (performance.now() < end);
    };
    const timed = async (share: number) => {
      const t0 = performance.now();
      await scanCluster({ client: c, snapshot, plan, scope, pageSize: 1000, sliceMs: 2, share }, work);
      return performance.now() - t0;
    };
    const whole = await timed(1);
    const quarter = await timed(0.25);
    // With a quarter share, three times the working time goes to pauses: about 1,500 ms more.
    expect(quarter - whole).toBeGreaterThan(1000);
  });

  it('keeps to the request rate', async () => {
    const t0 = Date.now();
    const { result } = await scan(cluster(400), { pageSize: 50, limiter: new RateLimiter(100, 1) });
    expect(result.listed).toBe(400);
    // 8 pages at 100 requests per second, one at a time: at least 70 ms.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(70);
  });
});

describe('discoverResources', () => {
  it('reads every group`s preferred version and reports a group that fails', async () => {
    const c = new FakeCluster();
    c.hooks.push((req) => {
      if (req.path === '/apis/events.k8s.io/v1')
        throw new KubeApiError(
          '503 ServiceUnavailable: the server is currently unable to handle the request',
          503,
          'ServiceUnavailable',
        );
    });
    const d = await discoverResources(c);
    expect(d.resources.map((r) => `${r.group}/${r.resource}`)).toContain('apps/deployments');
    expect(d.resources.map((r) => `${r.group}/${r.resource}`)).not.toContain('events.k8s.io/events');
    expect(d.failedGroups).toEqual([
      { groupVersion: 'events.k8s.io/v1', error: expect.stringContaining('503') },
    ]);
  });
});
