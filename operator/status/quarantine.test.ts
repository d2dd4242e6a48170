import { hostname } from 'node:os';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { RequestBudget } from '../../util/budget';
import { RuleStore } from '../../store/rules';
import { admit } from '../../engine/admit';
import { HEAVY_SPECS, modRule, neighbourRule } from '../../fixtures/heavy';
import { smallConfigMap } from '../../fixtures/hostile';
import { QuarantineOptions, RuleQuarantine } from '../../webhook/quarantine';
import { createKubeClient } from '../../kube/kube';
import { DEGRADED_REASON, QUARANTINED_EVENT_REASON, QuarantineStatus } from './quarantine';
import { StatusReporter } from './reporter';
import { ClusterSync } from '../rules/sync';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';

// Issue 24: a quarantined rule says so on the ModRule (Ready=False, reason Degraded, and a Warning Event), and
// says Ready again once the quarantine is over. Against the in-process fake API server; test/e2e proves the same
// on a real one.

const heavy = modRule('team', 'heavy', HEAVY_SPECS.find((h) => h.name === 'until-million')!.spec);

interface Harness {
  api: FakeApiServer;
  store: RuleStore;
  quarantine: RuleQuarantine;
  stop: () => Promise<void>;
}

async function start(options: QuarantineOptions = {}): Promise<Harness> {
  const api = await FakeApiServer.start();
  api.put('modrules', heavy);
  api.put('modrules', neighbourRule('team'));
  const store = new RuleStore();
  const client = createKubeClient(api.access());
  const logger = silentLogger();
  const quarantine = new RuleQuarantine(options, store);
  const degraded = new QuarantineStatus({ quarantine, store });
  const status = new StatusReporter({ client, logger, backoffMs: 10 });
  degraded.attach(status);
  const sync = new ClusterSync({ client, store, logger, status, backoff: { initialMs: 10, maxMs: 50 } });
  sync.start();
  await sync.synced;
  return {
    api,
    store,
    quarantine,
    stop: async () => {
      degraded.stop();
      quarantine.close();
      await sync.stop();
      await status.stop();
      await api.close();
    },
  };
}

// What the webhook does per request: the quarantine's check in, the offences booked after.
function admitConfigMap({ store, quarantine }: Harness): void {
  const snapshot = store.snapshot();
  const out = admit(
    { operation: 'CREATE', object: smallConfigMap('team'), oldObject: null, namespace: 'team' },
    snapshot,
    new RequestBudget({ steps: 250_000, ms: 60_000 }),
    { quarantined: quarantine.gate() },
  );
  quarantine.record(out, snapshot);
}

function ready(api: FakeApiServer, name: string): JsonObject | undefined {
  const status = api.get('modrules', 'team', name)?.status as JsonObject | undefined;
  return (status?.conditions as JsonObject[] | undefined)?.find((c) => c.type === 'Ready');
}

describe('a quarantined ModRule on the (fake) API server', () => {
  let h: Harness;
  afterEach(() => h.stop());

  it('is Ready=False (Degraded) with the reason and a Warning Event, then Ready again after its cool-down', async () => {
    h = await start({ coolDownMs: 1_500 });
    await eventually(() => ready(h.api, 'heavy')?.status === 'True');
    for (let i = 0; i < 3; i++) admitConfigMap(h);
    await eventually(() => ready(h.api, 'heavy')?.reason === DEGRADED_REASON);
    expect(ready(h.api, 'heavy')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(
        new RegExp(
          `^quarantined until \\S+Z on replica ${hostname()}: ran out of its share of the request budget 3 times ` +
            `\\(last: rule budget exhausted: more than 25000 evaluation steps \\(one rule's share\\)\\)`,
        ),
      ),
    });
    await eventually(() => h.api.list('events').length > 0);
    expect(h.api.list('events')).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: QUARANTINED_EVENT_REASON,
        involvedObject: expect.objectContaining({ kind: 'ModRule', name: 'heavy', namespace: 'team' }),
        message: expect.stringMatching(/^quarantined until/),
      }),
    ]);
    // Its neighbour is not touched.
    expect(ready(h.api, 'neighbour')).toMatchObject({ status: 'True', reason: 'Valid' });
    // The cool-down ends: Ready again.
    await eventually(() => ready(h.api, 'heavy')?.status === 'True', 10_000);
    expect(ready(h.api, 'heavy')?.reason).toBe('Valid');
  });

  it('is Ready again at once when the tenant changes the rule', async () => {
    h = await start();
    await eventually(() => ready(h.api, 'heavy')?.status === 'True');
    for (let i = 0; i < 3; i++) admitConfigMap(h);
    await eventually(() => ready(h.api, 'heavy')?.reason === DEGRADED_REASON);
    const slim = neighbourRule('team', 'heavy');
    h.api.put('modrules', { ...slim, metadata: { ...(slim.metadata as JsonObject), generation: 2 } });
    await eventually(() => ready(h.api, 'heavy')?.status === 'True');
    expect(h.quarantine.size).toBe(0);
  });

  it("leaves another replica's Degraded condition alone until the time it names, then puts Ready back", async () => {
    h = await start();
    await eventually(() => ready(h.api, 'heavy')?.status === 'True');
    // Three seconds ahead: the check 300 ms after the write must come before it on a loaded machine (1 s once did not).
    const until = new Date(Date.now() + 3_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const theirs = {
      type: 'Ready',
      status: 'False',
      reason: DEGRADED_REASON,
      message: `quarantined until ${until} on replica modrule-other-7f9c: ran out of its share ...`,
      lastTransitionTime: until,
      observedGeneration: (h.api.get('modrules', 'team', 'heavy')?.metadata as JsonObject).generation,
    };
    h.api.put('modrules', { ...heavy, status: { conditions: [theirs] } });
    await new Promise((r) => setTimeout(r, 300));
    expect(ready(h.api, 'heavy')).toMatchObject({ reason: DEGRADED_REASON, message: theirs.message });
    await eventually(() => ready(h.api, 'heavy')?.status === 'True', 10_000);
  });
});
