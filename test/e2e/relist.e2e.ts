import { randomBytes } from 'node:crypto';
import { JsonObject } from '../../util/json';
import { KubeClient } from '../../kube/kube';
import { RunningOperator } from '../../operator/start';
import { apply, waitFor } from './cluster';
import { metricSum } from './metrics';
import { OperatorHarness, operatorHarness } from './operator-harness';
import { describeOwn } from './target';

/*
 * A relist of ModRules on a real API server (it restarts; the informer's watch from before gets 410 Gone and lists
 * again) is not an edit: a rule failing at run time keeps its Failing condition (same lastTransitionTime, never
 * False in between) and a quarantined rule stays quarantined (same cool-down, never Ready in between). An edit made
 * after it still starts afresh. Own control plane only: it restarts the API server.
 */

const run = randomBytes(3).toString('hex');
const SCOPE = `modrule-e2e-${run}`;
const NS = `modrule-relist-${run}`;
const MODRULES = `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`;
const measured: Record<string, string> = {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
jest.setTimeout(300_000);

/** A Patch rule on ConfigMaps whose name starts with `prefix`, adding `value` as the label `name`. */
const configMapRule = (name: string, prefix: string, value: string): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: NS },
  spec: {
    type: 'Patch',
    match: [
      { select: '$.kind', matchValue: 'ConfigMap' },
      { select: '$.metadata.name', matchRegex: `^${prefix}` },
    ],
    patch: [{ op: 'add', path: `/metadata/labels/${name}`, value }],
  },
});

const conditionOf = (rule: JsonObject, type: string): JsonObject | undefined =>
  (((rule.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]).find((c) => c.type === type);

async function createConfigMap(admin: KubeClient, prefix: string): Promise<JsonObject> {
  const name = `${prefix}${randomBytes(3).toString('hex')}`;
  return admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } },
  });
}

async function modRuleLists(op: RunningOperator): Promise<number> {
  return metricSum(await op.webhook.registry.metrics(), 'modrule_informer_lists', ['resource="modrules"']);
}

describeOwn(`a relist of ModRules on a real API server (namespace ${NS})`, () => {
  let h: OperatorHarness;
  let op: RunningOperator;

  beforeAll(async () => {
    h = await operatorHarness(SCOPE);
    await h.namespace(NS);
    // A quarantine long enough to outlast the restart.
    op = await h.start({ quarantine: { coolDownMs: 240_000 } });
    await waitFor('the operator to be ready', async () => op.isReady());
  });

  afterAll(async () => {
    await h?.tearDown();
    process.stderr.write(`relist e2e:\n${JSON.stringify(measured, null, 2)}\n`);
  });

  it('keeps Failing and the quarantine across an API server restart; an edit afterwards still resets them', async () => {
    const { admin } = h;
    await apply(admin, MODRULES, configMapRule('divides', 'divide-', '{{ div 1 0 }}'));
    await apply(
      admin,
      MODRULES,
      configMapRule('heavy', 'heavy-', '{{ range $i := until 1000000 }}{{ end }}x'),
    );
    const rule = (name: string) => admin.request('GET', `${MODRULES}/${name}`);
    await waitFor('divides to show Failing', async () => {
      await createConfigMap(admin, 'divide-');
      return conditionOf(await rule('divides'), 'Failing')?.status === 'True';
    });
    await waitFor('heavy to be quarantined (Ready=False, Degraded)', async () => {
      await createConfigMap(admin, 'heavy-');
      return conditionOf(await rule('heavy'), 'Ready')?.reason === 'Degraded';
    });
    // Wait for the status writes of both to settle (the Failing count is updated at most every 10 s).
    await sleep(11_000);
    const failing = conditionOf(await rule('divides'), 'Failing')!;
    const degraded = conditionOf(await rule('heavy'), 'Ready')!;

    // Every 100 ms from now: any sign of a flap.
    const flaps: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        try {
          const [f, d] = [
            conditionOf(await rule('divides'), 'Failing'),
            conditionOf(await rule('heavy'), 'Ready'),
          ];
          if (f?.status !== 'True' || f.lastTransitionTime !== failing.lastTransitionTime)
            flaps.push(`Failing ${f?.status} since ${f?.lastTransitionTime}`);
          if (d?.reason !== 'Degraded' || d.message !== degraded.message)
            flaps.push(`Ready ${d?.status} ${d?.reason}: ${d?.message}`);
        } catch {
          // the API server is down
        }
        await sleep(100);
      }
    })();

    const lists = await modRuleLists(op);
    const down = Date.now();
    await h.cluster.own!.restartApiServer(2_000);
    await waitFor(
      'the operator to list ModRules again',
      async () => (await modRuleLists(op)) > lists,
      60_000,
    );
    measured['API server restart to ModRule relist'] = `${Date.now() - down} ms`;
    await sleep(5_000); // several sweeps of the failure records and status writes after the relist
    watching = false;
    await watcher;
    expect(flaps).toEqual([]);
    expect(conditionOf(await rule('divides'), 'Failing')).toEqual(failing);
    expect(conditionOf(await rule('heavy'), 'Ready')).toEqual(degraded);
    // Still skipped: a heavy- ConfigMap is admitted without its label.
    const skipped = await createConfigMap(admin, 'heavy-');
    expect(((skipped.metadata as JsonObject).labels as JsonObject | undefined)?.heavy).toBeUndefined();

    // An edit after the relist starts both afresh.
    await apply(admin, MODRULES, configMapRule('divides', 'divide-', '"{{ div 4 2 }}"'));
    await apply(admin, MODRULES, configMapRule('heavy', 'heavy-', '"slim"'));
    await waitFor('the edits to clear Failing and the quarantine', async () => {
      const [f, d] = [
        conditionOf(await rule('divides'), 'Failing'),
        conditionOf(await rule('heavy'), 'Ready'),
      ];
      return f?.status === 'False' && d?.status === 'True';
    });
    const slim = await createConfigMap(admin, 'heavy-');
    expect(((slim.metadata as JsonObject).labels as JsonObject).heavy).toBe('slim');
  });
});
