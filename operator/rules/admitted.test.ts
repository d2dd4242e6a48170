import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { CompiledRule } from '../../rule/compile';
import { RuleStore } from '../../store/rules';
import { AdmittedRules, RuleVersion } from './admitted';
import { createKubeClient } from '../../kube/kube';
import { FakeApiServer } from '../testing/fake-apiserver';
import { labelRule } from '../testing/objects';

const compile = (rule: JsonObject): CompiledRule => new RuleStore().compileRule(rule).rule!;

/** The result of a wait: 'caught_up' or 'timed_out' by the metric, and how long it took. */
async function timed(wait: Promise<void> | null): Promise<number> {
  const start = Date.now();
  await wait;
  return Date.now() - start;
}

async function waits(registry: Registry, result: string): Promise<number> {
  const m = await registry.getSingleMetric('modrule_dragnet_store_waits_total')!.get();
  return m.values.find((v) => v.labels.result === result)?.value ?? 0;
}

describe('AdmittedRules', () => {
  let api: FakeApiServer;
  let registry: Registry;
  let admitted: AdmittedRules;

  beforeEach(async () => {
    api = await FakeApiServer.start();
    registry = new Registry();
    admitted = new AdmittedRules({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      clusterNamespace: 'kubemod-system',
      registry,
      checkAfterMs: 100,
      maxAgeMs: 400,
    });
  });
  afterEach(async () => {
    admitted.stop();
    await api.close();
  });

  const version = (rule: JsonObject, generation = 1): RuleVersion => {
    const m = rule.metadata as JsonObject;
    return { namespace: String(m.namespace), name: String(m.name), uid: String(m.uid), generation };
  };

  it('holds nothing while no admitted rule is missing from the store', () => {
    expect(admitted.until('team-a', 1000)).toBeNull();
    const stored = api.put('modrules', labelRule('team-a', 'r'));
    admitted.handlers().upsert(stored);
    admitted.admit(version(stored), compile(stored));
    expect(admitted.until('team-a', 1000)).toBeNull(); // the store already has it
  });

  it("holds requests of the rule's namespace until the store has that uid at that generation", async () => {
    const stored = api.put('modrules', labelRule('team-a', 'r'));
    admitted.admit(version(stored, 2), compile(stored));
    expect(admitted.rules().map((r) => r.name)).toEqual(['r']);
    expect(admitted.until('team-b', 1000)).toBeNull();
    const wait = timed(admitted.until('team-a', 5000));
    setTimeout(() => admitted.handlers().upsert(stored), 20); // generation 1: older, still waiting
    setTimeout(
      () =>
        admitted
          .handlers()
          .upsert({ ...stored, metadata: { ...(stored.metadata as JsonObject), generation: 2 } }),
      60,
    );
    const ms = await wait;
    expect(ms).toBeGreaterThanOrEqual(50);
    expect(ms).toBeLessThan(1000);
    expect(await waits(registry, 'caught_up')).toBe(1);
    expect(admitted.rules()).toEqual([]);
  });

  it('a rule of the cluster namespace holds every namespace and cluster-scoped objects', () => {
    const stored = api.put('modrules', labelRule('kubemod-system', 'wide'));
    admitted.admit(version(stored), compile(stored));
    expect(admitted.until('anything', 10)).not.toBeNull();
    expect(admitted.until('', 10)).not.toBeNull();
  });

  it('drops a rule whose write never landed once a read shows it absent', async () => {
    const rule = labelRule('team-a', 'never');
    const never = { namespace: 'team-a', name: 'never', uid: 'no-such-uid', generation: 1 };
    admitted.admit(never, compile(rule));
    admitted.answered(never);
    const ms = await timed(admitted.until('team-a', 5000));
    expect(ms).toBeLessThan(1000);
    expect(
      api.requestsTo('GET', '/apis/api.kubemod.io/v1beta1/namespaces/team-a/modrules/never'),
    ).toHaveLength(1);
    expect(admitted.rules()).toEqual([]);
  });

  it('an update that never landed (the stored generation is older) is dropped too', async () => {
    const stored = api.put('modrules', labelRule('team-a', 'old'));
    admitted.admit(version(stored, 5), compile(stored));
    admitted.answered(version(stored, 5));
    await timed(admitted.until('team-a', 5000));
    expect(admitted.rules()).toEqual([]);
  });

  it('a waiting request is answered within its budget when the store stays behind', async () => {
    const stored = api.put('modrules', labelRule('team-a', 'slow'));
    admitted.admit(version(stored), compile(stored));
    const ms = await timed(admitted.until('team-a', 50));
    expect(ms).toBeLessThan(300);
    expect(await waits(registry, 'timed_out')).toBe(1);
    // Present in the API server but never in the store: given up after maxAgeMs.
    await new Promise((r) => setTimeout(r, 600));
    expect(admitted.rules()).toEqual([]);
  });

  it('keeps holding for generation 1 when generation 2 is admitted before the store has either', async () => {
    const stored = api.put('modrules', labelRule('team-a', 'edited'));
    const gen2 = { ...stored, metadata: { ...(stored.metadata as JsonObject), generation: 2 } };
    admitted.admit(version(stored, 1), compile(stored));
    let released = false;
    const wait = admitted.until('team-a', 5000)!.then(() => (released = true));
    // The edit is admitted while the store has neither version: the request held for generation 1 goes on waiting.
    admitted.admit(version(stored, 2), compile(gen2));
    await new Promise((r) => setTimeout(r, 30));
    expect(released).toBe(false);
    expect(await waits(registry, 'caught_up')).toBe(0);
    admitted.handlers().upsert(stored); // generation 1 lands: the request held for it goes
    await wait;
    expect(await waits(registry, 'caught_up')).toBe(1);
    // Generation 2 is still pending: a new request waits for it.
    expect(admitted.until('team-a', 10)).not.toBeNull();
    admitted.handlers().upsert(gen2);
    expect(admitted.until('team-a', 10)).toBeNull();
  });

  it('a refused edit stops holding for itself only, not for the version before it', async () => {
    const stored = api.put('modrules', labelRule('team-a', 'refused'));
    admitted.admit(version(stored, 1), compile(stored));
    admitted.admit(version(stored, 2), compile(stored));
    admitted.forget(version(stored, 2));
    expect(admitted.until('team-a', 10)).not.toBeNull();
    admitted.handlers().upsert(stored);
    expect(admitted.until('team-a', 10)).toBeNull();
  });

  it('does not drop a rule while its own admission is still running (its write cannot have landed yet)', async () => {
    const rule = labelRule('team-a', 'slow-admission');
    const v = { namespace: 'team-a', name: 'slow-admission', uid: 'u-slow', generation: 1 };
    admitted.admit(v, compile(rule));
    // The look-ups after checkAfterMs find nothing: the API server stores the rule only once the webhook answered.
    await new Promise((r) => setTimeout(r, 250));
    expect(admitted.rules().map((r) => r.name)).toEqual(['slow-admission']);
    expect(admitted.until('team-a', 10)).not.toBeNull();
    admitted.answered(v);
    // Answered, and still absent a look-up later: its write never landed.
    await new Promise((r) => setTimeout(r, 250));
    expect(admitted.rules()).toEqual([]);
  });

  it('counts both specs of one version admitted twice at once (one of the two writes will lose with a 409)', () => {
    const stored = api.put('modrules', labelRule('team-a', 'raced'));
    const a = compile(stored);
    const b = compile({
      ...stored,
      spec: { ...(stored.spec as JsonObject), match: [{ select: '$.kind', matchValue: 'ConfigMap' }] },
    });
    admitted.admit(version(stored, 2), a);
    admitted.admit(version(stored, 2), b);
    expect(admitted.rules()).toHaveLength(2);
    admitted
      .handlers()
      .upsert({ ...stored, metadata: { ...(stored.metadata as JsonObject), generation: 2 } });
    expect(admitted.rules()).toEqual([]);
  });

  it('keeps a create while another object holds its name until its admission is answered, then drops it', async () => {
    // The other object may be deleted before this create lands (the simulation's seed 66), so only an answered
    // admission with another uid stored is a create that failed (AlreadyExists).
    api.put('modrules', labelRule('team-a', 'taken'));
    const lost = { namespace: 'team-a', name: 'taken', uid: 'u-lost', generation: 1 };
    admitted.admit(lost, compile(labelRule('team-a', 'taken')));
    await new Promise((r) => setTimeout(r, 250));
    expect(admitted.rules().length).toBe(1);
    admitted.answered(lost);
    await new Promise((r) => setTimeout(r, 250));
    expect(admitted.rules()).toEqual([]);
    expect(admitted.until('team-a', 10)).toBeNull();
  });
});
