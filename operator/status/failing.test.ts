import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { RequestBudget } from '../../util/budget';
import { RuleStore } from '../../store/rules';
import { admit } from '../../engine/admit';
import { RuleFailures } from '../../webhook/rule-failures';
import { FAILING_EVENT_REASON, FailingStatus } from './failing';
import { StatusReporter } from './reporter';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { modRule } from '../testing/objects';

// A rule that fails at run time shows it on the ModRule (condition Failing, named in Ready's message, Ready stays
// True), with one Warning Event, and clears once the window passed without an error. Against the in-process API
// server; test/e2e proves the same on a real one.

const divides = (value: string) =>
  modRule('team', 'divides', {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/ratio', value }],
  });

interface Harness {
  api: FakeApiServer;
  store: RuleStore;
  status: StatusReporter;
  failures: RuleFailures;
  registry: Registry;
}

const cluster = useClusterSync();
const running: Array<() => void> = [];
afterEach(() => running.splice(0).forEach((stop) => stop()));

/** The failing rule in the cluster, its failures shown by a FailingStatus; the sync started when `sync` is set. */
async function start(windowMs: number, updateMs = 10_000, sync = true): Promise<Harness> {
  const { api, store, status } = cluster;
  api.put('modrules', divides('{{ div 1 0 }}'));
  const failures = new RuleFailures({ windowMs }, store);
  const registry = new Registry();
  const failing = new FailingStatus({ failures, status, registry, sweepMs: 20, updateMs });
  failing.start();
  running.push(() => {
    failing.stop();
    failures.close();
  });
  if (sync) {
    cluster.sync.start();
    await cluster.sync.synced;
  }
  return { api, store, status, failures, registry };
}

// What the webhook does per request: evaluate, and book the failures if any.
function admitConfigMap({ store, failures }: Harness, name: string): void {
  const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team' }, data: {} };
  const out = admit(
    { operation: 'CREATE', object, oldObject: null, namespace: 'team' },
    store.snapshot(),
    new RequestBudget({ steps: 250_000, ms: 60_000 }),
  );
  if (out.failures.length > 0) failures.record(out.failures, () => `ConfigMap team/${name} (CREATE)`);
}

const conditions = (api: FakeApiServer) =>
  ((api.get('modrules', 'team', 'divides')?.status as JsonObject | undefined)?.conditions ??
    []) as JsonObject[];
const failingOf = (api: FakeApiServer) => conditions(api).find((c) => c.type === 'Failing');
const gauge = async (h: Harness) =>
  (await h.registry.getSingleMetric('modrule_rules_failing')!.get()).values[0].value;

describe('a ModRule that fails at run time, on the (fake) API server', () => {
  let h: Harness;

  it('shows Failing with the count, last error and object, Ready still True naming it, and one Warning Event', async () => {
    h = await start(60_000);
    await eventually(() => conditions(h.api)[0]?.status === 'True');
    admitConfigMap(h, 'one');
    await eventually(() => failingOf(h.api)?.status === 'True');
    expect(failingOf(h.api)).toMatchObject({
      reason: 'RunTimeErrors',
      message: expect.stringMatching(
        /^failing at run time: 1 error in the last 1m on replica \S+\. Last at \S+Z on ConfigMap team\/one \(CREATE\): .*divide by zero.*Reported until \S+Z on replica \S+ unless it fails again$/,
      ),
    });
    expect(conditions(h.api)[0]).toMatchObject({
      type: 'Ready',
      status: 'True',
      reason: 'Valid',
      message: expect.stringMatching(
        /^in effect, but failing at run time: 1 error in the last 1m on replica \S+$/,
      ),
    });
    expect(await gauge(h)).toBe(1);
    // Many more failures: the condition is updated at most every updateMs, and no second Event.
    for (let i = 0; i < 50; i++) admitConfigMap(h, `more-${i}`);
    await new Promise((r) => setTimeout(r, 300));
    expect(failingOf(h.api)?.message).toMatch(/^failing at run time: 1 error/);
    const events = h.api.list('events');
    expect(events).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: FAILING_EVENT_REASON,
        involvedObject: expect.objectContaining({ kind: 'ModRule', name: 'divides', namespace: 'team' }),
        message: expect.stringMatching(/^failing at run time/),
      }),
    ]);
  });

  it('updates the count after updateMs, and clears itself once the window passed without an error', async () => {
    h = await start(1_500, 200);
    await eventually(() => conditions(h.api)[0]?.status === 'True');
    admitConfigMap(h, 'one');
    await eventually(() => failingOf(h.api)?.status === 'True');
    const since = failingOf(h.api)!.lastTransitionTime;
    for (let i = 0; i < 3; i++) admitConfigMap(h, `more-${i}`);
    await eventually(() => /^failing at run time: 4 errors/.test(String(failingOf(h.api)?.message)));
    expect(failingOf(h.api)!.lastTransitionTime).toBe(since);
    await eventually(() => failingOf(h.api)?.status === 'False', 5_000);
    expect(failingOf(h.api)).toMatchObject({ reason: 'NotFailing' });
    expect(conditions(h.api)[0]).toMatchObject({ status: 'True', message: 'ModRule is valid and in effect' });
    expect(await gauge(h)).toBe(0);
  });

  it('clears at once when the tenant fixes the rule', async () => {
    h = await start(60_000);
    await eventually(() => conditions(h.api)[0]?.status === 'True');
    admitConfigMap(h, 'one');
    await eventually(() => failingOf(h.api)?.status === 'True');
    const fixed = divides('"{{ div 4 2 }}"');
    h.api.put('modrules', { ...fixed, metadata: { ...(fixed.metadata as JsonObject), generation: 2 } });
    await eventually(() => failingOf(h.api)?.status === 'False');
    admitConfigMap(h, 'two');
    await new Promise((r) => setTimeout(r, 200));
    expect(failingOf(h.api)?.status).toBe('False');
  });

  it('keeps Failing across a relist (410 Gone): same condition, same lastTransitionTime, no flap', async () => {
    h = await start(60_000, 100);
    await eventually(() => conditions(h.api)[0]?.status === 'True');
    admitConfigMap(h, 'one');
    await eventually(() => failingOf(h.api)?.status === 'True');
    const since = failingOf(h.api)!.lastTransitionTime;
    const writes = () => h.api.requestsTo('PUT', /\/modrules\/divides\/status$/).length;
    const before = writes();
    // The watch history is gone: the informer's next watch gets 410 and it lists every ModRule again.
    h.api.compact();
    h.api.dropWatches();
    await eventually(() => cluster.sync.informerStates()[0].lists === 2);
    await new Promise((r) => setTimeout(r, 300)); // many sweeps (every 20 ms)
    expect(failingOf(h.api)).toMatchObject({ status: 'True', lastTransitionTime: since });
    expect(h.failures.current()).toEqual([expect.objectContaining({ count: 1 })]);
    expect(writes()).toBe(before); // nothing cleared and set again in between
    // A real edit still starts afresh.
    const fixed = divides('"{{ div 4 2 }}"');
    h.api.put('modrules', { ...fixed, metadata: { ...(fixed.metadata as JsonObject), generation: 2 } });
    await eventually(() => failingOf(h.api)?.status === 'False');
  });

  it('sends the Event once the reporter knows the rule (a new rule is reported only once it is in force)', async () => {
    h = await start(60_000, 10_000, false);
    const rule = h.api.get('modrules', 'team', 'divides')!;
    h.failures.record(
      [{ rule: { namespace: 'team', name: 'divides' }, message: 'division by zero' }],
      () => 'x',
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(h.api.list('events')).toEqual([]);
    h.status.report(rule, []);
    await eventually(() => h.api.list('events').length === 1);
    await eventually(() => failingOf(h.api)?.status === 'True');
  });
});
