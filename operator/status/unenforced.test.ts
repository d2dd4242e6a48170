import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { RuleStore } from '../../store/rules';
import { admit } from '../../engine/admit';
import { RuleUnenforced } from '../../webhook/rule-unenforced';
import { UnenforcedStatus, WOULD_PATCH_EVENT_REASON } from './unenforced';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { modRule } from '../testing/objects';

// A rule in DryRun that would patch shows it on the ModRule (condition NotEnforced with the count and the last
// object, named in Ready's message), with one Event, and clears when it is switched to Enforce. Against the
// in-process API server; test/e2e proves the same on a real one.

const tagging = (action: string, generation = 1) => ({
  ...modRule('team', 'tagging', {
    type: 'Patch',
    enforcementAction: action,
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
  }),
  metadata: { name: 'tagging', namespace: 'team', generation },
});

interface Harness {
  api: FakeApiServer;
  store: RuleStore;
  unenforced: RuleUnenforced;
  registry: Registry;
}

const cluster = useClusterSync();
const running: Array<() => void> = [];
afterEach(() => running.splice(0).forEach((stop) => stop()));

async function start(windowMs: number, updateMs = 10_000): Promise<Harness> {
  const { api, store, status } = cluster;
  api.put('modrules', tagging('DryRun'));
  const unenforced = new RuleUnenforced({ windowMs }, store);
  const registry = new Registry();
  const shown = new UnenforcedStatus({ unenforced, status, registry, sweepMs: 20, updateMs });
  shown.start();
  running.push(() => {
    shown.stop();
    unenforced.close();
  });
  cluster.sync.start();
  await cluster.sync.synced;
  return { api, store, unenforced, registry };
}

// What the webhook does per request: evaluate, and book what Warn/DryRun rules would have done.
function admitConfigMap({ store, unenforced }: Harness, name: string): JsonObject | null {
  const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team' }, data: {} };
  const out = admit({ operation: 'CREATE', object, oldObject: null, namespace: 'team' }, store.snapshot());
  if (out.unenforced.length > 0) unenforced.record(out.unenforced, () => `ConfigMap team/${name} (CREATE)`);
  return out.object;
}

const conditions = (api: FakeApiServer) =>
  ((api.get('modrules', 'team', 'tagging')?.status as JsonObject | undefined)?.conditions ??
    []) as JsonObject[];
const notEnforced = (api: FakeApiServer) => conditions(api).find((c) => c.type === 'NotEnforced');
const gauge = async (h: Harness) =>
  (await h.registry.getSingleMetric('modrule_rules_not_enforced')!.get()).values[0].value;

describe('a ModRule in DryRun that would patch, on the (fake) API server', () => {
  it('shows NotEnforced with the count and last object, Ready still True naming it, one Event, the gauge', async () => {
    const h = await start(60_000, 50);
    await eventually(() => conditions(h.api)[0]?.status === 'True');
    for (let i = 0; i < 3; i++) {
      const object = admitConfigMap(h, `cm-${i}`);
      expect((object?.metadata as JsonObject).labels).toBeUndefined();
    }
    await eventually(() => /would have patched 3 objects/.test(String(notEnforced(h.api)?.message)));
    expect(notEnforced(h.api)).toMatchObject({
      status: 'True',
      reason: 'DryRun',
      message: expect.stringMatching(
        /^DryRun: would have patched 3 objects in the last 1m on replica \S+ \(admitted unpatched\)\. Last at \S+Z on ConfigMap team\/cm-2 \(CREATE\): would patch: add \/metadata\/labels\. Set spec\.enforcementAction to Enforce to enforce it\. Reported until \S+Z on replica \S+ unless it matches again$/,
      ),
    });
    expect(conditions(h.api)[0]).toMatchObject({
      type: 'Ready',
      status: 'True',
      message: expect.stringMatching(/^in effect, but DryRun: would have patched \d objects? in the last 1m/),
    });
    expect(await gauge(h)).toBe(1);
    expect(h.api.list('events')).toEqual([
      expect.objectContaining({
        reason: WOULD_PATCH_EVENT_REASON,
        involvedObject: expect.objectContaining({ kind: 'ModRule', name: 'tagging', namespace: 'team' }),
        message: expect.stringMatching(/^DryRun: would have patched \d+ objects?/),
      }),
    ]);
  });

  it('clears when switched to Enforce, and the next object is patched', async () => {
    const h = await start(60_000);
    await eventually(() => conditions(h.api)[0]?.status === 'True');
    admitConfigMap(h, 'one');
    await eventually(() => notEnforced(h.api)?.status === 'True');
    h.api.put('modrules', tagging('Enforce', 2));
    await eventually(() => notEnforced(h.api)?.status === 'False');
    expect(notEnforced(h.api)).toMatchObject({ reason: 'NoneRecently' });
    expect((admitConfigMap(h, 'two')?.metadata as JsonObject).labels).toEqual({ team: 'platform' });
    await new Promise((r) => setTimeout(r, 100));
    expect(notEnforced(h.api)?.status).toBe('False');
    expect(await gauge(h)).toBe(0);
  });
});
