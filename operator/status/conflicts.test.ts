import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { RuleStore } from '../../store/rules';
import { generatedRules } from '../../fixtures/team-rules';
import { ConflictStatus } from './conflicts';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { modRule } from '../testing/objects';

// Two teams' rules in conflict show it on both ModRules (condition Conflicting naming the other), with the gauges,
// and clear when one goes. Against the in-process API server.

const teamLabel = (name: string, value: string) =>
  modRule('shop', name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'Deployment' }],
    patch: [{ op: 'add', path: '/metadata/labels/team', value }],
  });

const cluster = useClusterSync();
const running: Array<() => void> = [];
afterEach(() => running.splice(0).forEach((stop) => stop()));

const conditionOf = (api: FakeApiServer, name: string) =>
  (
    ((api.get('modrules', 'shop', name)?.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]
  ).find((c) => c.type === 'Conflicting');

describe('rules in conflict, on the (fake) API server', () => {
  it('both show Conflicting naming the other, Ready still True; cleared when one is deleted', async () => {
    const { api, store, status, sync } = cluster;
    api.put('modrules', teamLabel('web', 'web'));
    api.put('modrules', teamLabel('db', 'db'));
    const registry = new Registry();
    const conflicts = new ConflictStatus({
      store,
      status,
      registry,
      clusterNamespace: 'kubemod-system',
      quietMs: 20,
    });
    conflicts.start();
    running.push(() => conflicts.stop());
    sync.start();
    await sync.synced;
    await eventually(
      () => conditionOf(api, 'web')?.status === 'True' && conditionOf(api, 'db')?.status === 'True',
    );
    for (const name of ['web', 'db'])
      expect(conditionOf(api, name)).toMatchObject({
        reason: 'SameTierValues',
        message: expect.stringMatching(
          /^in conflict: one conflict found\. ModRules shop\/db and shop\/web \(tier 0\) both write \/metadata\/labels\/team on Deployment: .*Both rules still run, in tier and name order$/,
        ),
      });
    const ready = ((api.get('modrules', 'shop', 'web')!.status as JsonObject).conditions as JsonObject[])[0];
    expect(ready).toMatchObject({
      type: 'Ready',
      status: 'True',
      message: expect.stringMatching(/^in effect, but in conflict/),
    });
    const gauge = async (name: string) => (await registry.getSingleMetric(name)!.get()).values;
    expect((await gauge('modrule_rules_conflicting'))[0].value).toBe(2);
    expect((await gauge('modrule_rule_conflicts')).find((v) => v.labels.kind === 'value')?.value).toBe(1);
    api.remove('modrules', 'shop', 'db');
    await eventually(() => conditionOf(api, 'web')?.status === 'False');
    expect(conditionOf(api, 'web')).toMatchObject({ reason: 'NoConflict' });
    expect((await gauge('modrule_rules_conflicting'))[0].value).toBe(0);
  });

  it('10,000 rules: checked in slices, none holding the event loop long', async () => {
    const store = new RuleStore();
    expect(store.replaceRules(generatedRules(10_000))).toEqual([]);
    const conflicts = new ConflictStatus({ store, status: null, clusterNamespace: 'kubemod-system' });
    // The event loop keeps turning while it checks: a timer every millisecond counts its turns and longest wait.
    let last = performance.now();
    let longestWait = 0;
    let turns = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longestWait = Math.max(longestWait, now - last);
      last = now;
      turns++;
    }, 1);
    await conflicts.checkNow();
    clearInterval(timer);
    expect(conflicts.last?.stats.rules).toBe(10_000);
    // Many turns, each wait a slice (5 ms) plus what a busy shared machine and a major GC add: loosely bounded.
    expect(turns).toBeGreaterThan(20);
    expect(longestWait).toBeLessThan(1_000);
  });
});
