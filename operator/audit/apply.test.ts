import { JsonObject } from '../../util/json';
import { storeFromYaml } from '../../engine/testing';
import { auditObject } from '../../audit/evaluate';
import { ObjectAudit, ListableResource } from '../../audit/types';
import { CORE_RESOURCES, FakeCluster } from '../testing/fake-cluster';
import { KubeApiError } from '../../kube/kube';
import { bringInLine, Pool } from './apply';

const RULES = [
  `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: team, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]`,
  `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-secrets, namespace: shop}
spec:
  type: Reject
  rejectMessage: no secrets in ConfigMaps
  match: [{select: '$.data.password'}]`,
];
const CONFIGMAPS = CORE_RESOURCES.find((r) => r.resource === 'configmaps') as ListableResource;
const PATH = '/api/v1/namespaces/shop/configmaps/settings';

function setUp(data: Record<string, string> = { a: 'b' }) {
  const c = new FakeCluster();
  c.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'shop' }, data });
  const snapshot = storeFromYaml(RULES).snapshot();
  const reaudit = (o: JsonObject, r: ListableResource) => auditObject(o, r, { snapshot });
  const audit = reaudit(c.get('ConfigMap', 'shop', 'settings')!, CONFIGMAPS) as ObjectAudit;
  return { c, audit, options: { client: c, dryRun: false, reaudit } };
}

const writes = (c: FakeCluster) =>
  c.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path} ${JSON.stringify(r.query)}`);

describe('bringInLine', () => {
  it('sends a server-side dry run, then the webhook`s patch guarded by the resourceVersion it read', async () => {
    const { c, audit, options } = setUp();
    const rv = audit.ref.resourceVersion;
    const outcome = await bringInLine(audit, CONFIGMAPS, options);
    expect(outcome).toMatchObject({ status: 'patched', conflicts: 0 });
    expect(writes(c)).toEqual([
      `PATCH ${PATH} {"fieldManager":"modrule","dryRun":"All"}`,
      `PATCH ${PATH} {"fieldManager":"modrule"}`,
    ]);
    expect(c.requests[1].contentType).toBe('application/json-patch+json');
    expect(c.requests[1].body).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: rv },
      { op: 'add', path: '/metadata/labels', value: { team: 'platform' } },
    ]);
    expect((c.get('ConfigMap', 'shop', 'settings')!.metadata as JsonObject).labels).toEqual({
      team: 'platform',
    });
  });

  it('--dry-run: only the dry run goes out, and the request it would send is returned', async () => {
    const { c, audit, options } = setUp();
    const outcome = await bringInLine(audit, CONFIGMAPS, { ...options, dryRun: true });
    expect(outcome).toMatchObject({
      status: 'dry-run',
      request: { path: PATH, query: { fieldManager: 'modrule' } },
    });
    expect(writes(c)).toEqual([`PATCH ${PATH} {"fieldManager":"modrule","dryRun":"All"}`]);
    expect((c.get('ConfigMap', 'shop', 'settings')!.metadata as JsonObject).labels).toBeUndefined();
  });

  it('retries a conflict from a fresh read and keeps the concurrent change', async () => {
    const { c, audit, options } = setUp();
    let raced = false;
    c.hooks.push((req, cluster) => {
      if (raced || req.method !== 'PATCH' || req.query.dryRun) return;
      raced = true;
      const current = cluster.get('ConfigMap', 'shop', 'settings')!;
      cluster.put({ ...current, data: { a: 'changed meanwhile' } });
    });
    const outcome = await bringInLine(audit, CONFIGMAPS, options);
    expect(outcome).toMatchObject({ status: 'patched', conflicts: 1 });
    const stored = c.get('ConfigMap', 'shop', 'settings')!;
    expect(stored.data).toEqual({ a: 'changed meanwhile' });
    expect((stored.metadata as JsonObject).labels).toEqual({ team: 'platform' });
  });

  it('re-evaluates after a conflict: the fresh object may be in line already, or now rejected', async () => {
    const { c, audit, options } = setUp();
    c.hooks.push((req, cluster) => {
      if (req.method !== 'PATCH' || req.query.dryRun) return;
      const current = cluster.get('ConfigMap', 'shop', 'settings')!;
      cluster.put({
        ...current,
        metadata: { ...(current.metadata as JsonObject), labels: { team: 'platform' } },
      });
    });
    expect(await bringInLine(audit, CONFIGMAPS, options)).toEqual({ status: 'in-line', conflicts: 1 });

    const second = setUp();
    second.c.hooks.push((req, cluster) => {
      if (req.method !== 'PATCH' || req.query.dryRun) return;
      const current = cluster.get('ConfigMap', 'shop', 'settings')!;
      cluster.put({ ...current, data: { password: 'hunter2' } });
    });
    expect(await bringInLine(second.audit, CONFIGMAPS, second.options)).toMatchObject({
      status: 'rejected',
      conflicts: 1,
      message: expect.stringContaining('no secrets in ConfigMaps'),
    });
  });

  it('gives up after a few conflicts in a row', async () => {
    const { c, audit, options } = setUp();
    c.hooks.push((req, cluster) => {
      if (req.method !== 'PATCH' || req.query.dryRun) return;
      cluster.put(cluster.get('ConfigMap', 'shop', 'settings')!); // a new resourceVersion every time
    });
    const outcome = await bringInLine(audit, CONFIGMAPS, { ...options, maxAttempts: 3 });
    expect(outcome).toMatchObject({
      status: 'failed',
      conflicts: 3,
      message: expect.stringMatching(/^still changing after 3 tries/),
    });
  });

  it('leaves rejected objects alone, and reports what the API server refuses with its reasons', async () => {
    const rejected = setUp({ password: 'x' });
    expect(rejected.audit.verdict).toBe('reject');
    expect(await bringInLine(rejected.audit, CONFIGMAPS, rejected.options)).toMatchObject({
      status: 'rejected',
    });
    expect(writes(rejected.c)).toEqual([]);

    const forbidden = setUp();
    forbidden.c.hooks.push((req) => {
      if (req.method === 'PATCH')
        throw new KubeApiError(
          '403 Forbidden: configmaps "settings" is forbidden: User "jane" cannot patch',
          403,
          'Forbidden',
        );
    });
    expect(await bringInLine(forbidden.audit, CONFIGMAPS, forbidden.options)).toMatchObject({
      status: 'failed',
      httpStatus: 403,
      message: expect.stringContaining('cannot patch'),
    });

    const invalid = setUp();
    invalid.c.hooks.push((req) => {
      if (req.method === 'PATCH')
        throw new KubeApiError('422 Invalid: ConfigMap "settings" is invalid', 422, 'Invalid', {
          details: { causes: [{ field: 'metadata.labels', message: 'Invalid value: "x y"' }] },
        });
    });
    // A 422 on an object that did not move on is the object's fault, not a conflict: no retry.
    expect(await bringInLine(invalid.audit, CONFIGMAPS, invalid.options)).toMatchObject({
      status: 'failed',
      conflicts: 0,
      message: expect.stringContaining('(metadata.labels: Invalid value: "x y")'),
    });

    const gone = setUp();
    gone.c.delete('ConfigMap', 'shop', 'settings');
    expect(await bringInLine(gone.audit, CONFIGMAPS, gone.options)).toEqual({ status: 'gone', conflicts: 0 });
  });
});

describe('Pool', () => {
  it('runs at most `width` tasks at a time and waits for all of them', async () => {
    const pool = new Pool(2);
    let running = 0;
    let most = 0;
    const done: number[] = [];
    for (let i = 0; i < 6; i++) {
      await pool.submit(async () => {
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        done.push(i);
      });
    }
    await pool.drain();
    expect(most).toBe(2);
    expect(done.sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
