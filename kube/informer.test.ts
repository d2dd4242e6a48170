import { JsonObject } from '../util/json';
import { silentLogger } from '../util/logger';
import { Informer, InformerOptions } from './informer';
import { createKubeClient, KubeApiError } from './kube';
import { eventually } from '../operator/testing/eventually';
import { FakeApiServer } from '../operator/testing/fake-apiserver';

/** A handler that mirrors what it is told into a map, the way the store does. */
function mirror() {
  const items = new Map<string, JsonObject>();
  const name = (o: JsonObject) => String((o.metadata as JsonObject).name);
  return {
    items,
    names: () => [...items.keys()].sort(),
    handlers: {
      replace: (list: JsonObject[]) => {
        items.clear();
        for (const o of list) items.set(name(o), o);
      },
      upsert: (o: JsonObject) => items.set(name(o), o),
      remove: (o: JsonObject) => items.delete(name(o)),
    },
  };
}

const ns = (name: string, labels: Record<string, string> = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});

describe('Informer against the fake API server', () => {
  let api: FakeApiServer;
  let informer: Informer | null = null;

  beforeEach(async () => {
    api = await FakeApiServer.start();
  });
  afterEach(async () => {
    await informer?.stop();
    informer = null;
    await api.close();
  });

  function start(m: ReturnType<typeof mirror>, options: Partial<InformerOptions> = {}): Informer {
    informer = new Informer({
      client: createKubeClient(api.access()),
      path: '/api/v1/namespaces',
      apiVersion: 'v1',
      kind: 'Namespace',
      handlers: m.handlers,
      logger: silentLogger(),
      backoff: { initialMs: 10, maxMs: 50 },
      watchTimeoutSeconds: 60,
      ...options,
    });
    informer.start();
    return informer;
  }

  it('lists, then follows adds, updates and deletes; list items get apiVersion and kind', async () => {
    api.put('namespaces', ns('a'));
    const m = mirror();
    const inf = start(m);
    await inf.synced;
    expect(m.names()).toEqual(['a']);
    expect(m.items.get('a')).toMatchObject({ apiVersion: 'v1', kind: 'Namespace' });
    await eventually(() => api.openWatches === 1);
    api.put('namespaces', ns('b'));
    api.put('namespaces', ns('a', { color: 'blue' }));
    await eventually(
      () => m.names().join() === 'a,b' && (m.items.get('a')?.metadata as JsonObject).labels !== undefined,
    );
    expect((m.items.get('a')?.metadata as JsonObject).labels).toEqual({ color: 'blue' });
    api.remove('namespaces', null, 'b');
    await eventually(() => m.names().join() === 'a');
  });

  it('resumes from its last resourceVersion after a dropped watch without relisting', async () => {
    const m = mirror();
    const inf = start(m);
    await inf.synced;
    await eventually(() => api.openWatches === 1);
    api.dropWatches();
    api.put('namespaces', ns('during-drop'));
    await eventually(() => m.names().join() === 'during-drop');
    expect(inf.listCount).toBe(1);
  });

  it.each(['event', 'status'] as const)(
    'relists after 410 Gone (reported as %s): objects deleted while disconnected disappear',
    async (expiredAs) => {
      api.expiredAs = expiredAs;
      api.put('namespaces', ns('keep'));
      api.put('namespaces', ns('doomed'));
      const m = mirror();
      const inf = start(m);
      await inf.synced;
      await eventually(() => api.openWatches === 1);
      await api.goDown();
      api.remove('namespaces', null, 'doomed');
      api.put('namespaces', ns('new'));
      api.compact();
      await api.comeUp();
      await eventually(() => m.names().join() === 'keep,new');
      expect(inf.listCount).toBe(2);
    },
  );

  it('relists as soon as the server is back after an outage, not after the next backoff step', async () => {
    // An API server restart: watches fail with connection errors for a while (the backoff grows), then the
    // restarted server answers the old resourceVersion with 410 Gone.
    api.put('namespaces', ns('before'));
    const m = mirror();
    const inf = start(m, {
      backoff: { initialMs: 200, maxMs: 10_000 },
      reconnect: { initialMs: 50, maxMs: 200 },
    });
    await inf.synced;
    await eventually(() => api.openWatches === 1);
    await api.goDown();
    await new Promise((r) => setTimeout(r, 2500));
    api.put('namespaces', ns('during'));
    api.compact();
    await api.comeUp();
    const back = Date.now();
    api.put('namespaces', ns('after'));
    await eventually(() => m.names().join() === 'after,before,during', 5000);
    // Before: the next attempt came up to one grown backoff step (1.6-3.2 s here) later, and the 410 then
    // waited one more step before relisting.
    expect(Date.now() - back).toBeLessThan(1000);
    expect(inf.listCount).toBe(2);
  });

  it('backs off when the server answers 410 to the watch of a list it just served', async () => {
    api.put('namespaces', ns('a'));
    api.interceptor = (r) => (r.query.watch === 'true' ? { status: 410, message: 'too old' } : undefined);
    const m = mirror();
    start(m, { backoff: { initialMs: 100, maxMs: 400 } });
    await new Promise((r) => setTimeout(r, 1000));
    // Without backing off it would relist hundreds of times a second.
    expect(api.requestsTo('GET', '/api/v1/namespaces').length).toBeLessThan(20);
  });

  it('keeps retrying while the API server fails, then syncs', async () => {
    api.put('namespaces', ns('a'));
    let failures = 3;
    api.interceptor = () => (failures-- > 0 ? { status: 503 } : undefined);
    const m = mirror();
    const inf = start(m);
    await inf.synced;
    expect(m.names()).toEqual(['a']);
    expect(api.requestsTo('GET', '/api/v1/namespaces').length).toBeGreaterThanOrEqual(4);
  });

  it('copes with a slow API server', async () => {
    api.put('namespaces', ns('a'));
    api.delayMs = 300;
    const m = mirror();
    const inf = start(m);
    await new Promise((r) => setTimeout(r, 100));
    expect(inf.hasSynced()).toBe(false);
    await inf.synced;
    expect(m.names()).toEqual(['a']);
    await eventually(() => api.openWatches === 1);
    api.put('namespaces', ns('b'));
    await eventually(() => m.names().join() === 'a,b');
  });

  it('is not synced while the first list has not arrived', async () => {
    api.interceptor = () => ({ status: 500 });
    const m = mirror();
    const inf = start(m);
    await new Promise((r) => setTimeout(r, 100));
    expect(inf.hasSynced()).toBe(false);
    api.interceptor = null;
    await inf.synced;
    expect(inf.hasSynced()).toBe(true);
  });

  it('survives a handler that throws', async () => {
    const m = mirror();
    let thrown = false;
    const handlers = {
      ...m.handlers,
      upsert: (o: JsonObject) => {
        if (!thrown) {
          thrown = true;
          throw new Error('boom');
        }
        m.handlers.upsert(o);
      },
    };
    informer = new Informer({
      client: createKubeClient(api.access()),
      path: '/api/v1/namespaces',
      apiVersion: 'v1',
      kind: 'Namespace',
      handlers,
      logger: silentLogger(),
      backoff: { initialMs: 10, maxMs: 50 },
    });
    informer.start();
    await informer.synced;
    await eventually(() => api.openWatches === 1);
    api.put('namespaces', ns('first'));
    api.put('namespaces', ns('second'));
    await eventually(() => m.names().join() === 'second');
  });
});

describe('KubeClient', () => {
  it('turns Status responses into KubeApiError with code and reason', async () => {
    const api = await FakeApiServer.start();
    try {
      const client = createKubeClient(api.access());
      const err = await client.request('GET', '/api/v1/namespaces/missing').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KubeApiError);
      expect(err).toMatchObject({ status: 404, reason: 'NotFound' });
      expect(api.requests[0]).toMatchObject({ method: 'GET', path: '/api/v1/namespaces/missing' });
    } finally {
      await api.close();
    }
  });

  it('reports an unreachable server as status 0', async () => {
    const api = await FakeApiServer.start();
    const client = createKubeClient(api.access());
    await api.close();
    await expect(client.request('GET', '/api/v1/nodes')).rejects.toMatchObject({ status: 0 });
  });
});
