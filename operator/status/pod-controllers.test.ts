import { JsonObject } from '../../util/json';
import { analyzeModRule } from '../../rule/compile';
import { ResourceCatalog } from '../../scope/catalog';
import { computeScope } from '../../scope/compute';
import { defaultConfigured } from '../../scope/defaults';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { modRule } from '../testing/objects';
import { PodControllersFacet } from './pod-controllers';

const podRule = (name: string, podControllers?: string[]) =>
  modRule('team', name, {
    type: 'Patch',
    ...(podControllers ? { podControllers } : {}),
    match: [{ select: '$.kind', matchValue: 'Pod' }],
    patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
  });

/** The scope's reports for these rules, as ScopeController hands them over (the store lists variants too). */
function reportsOf(rules: JsonObject[], configured = defaultConfigured('kubemod-system')) {
  const compiled = rules.map((r) => analyzeModRule(r).rule!);
  return computeScope({
    rules: compiled.flatMap((r) => [r, ...(r.variants ?? [])]),
    clusterNamespace: 'kubemod-system',
    configured,
    catalog: ResourceCatalog.builtin(),
  }).rules;
}

describe('status.podControllers on the (fake) API server', () => {
  const harness = useClusterSync();
  const statusOf = (name: string) => (harness.api.get('modrules', 'team', name)?.status ?? {}) as JsonObject;

  it('lists the controllers a Pod rule reaches, leaves other rules without it, and follows the net', async () => {
    const { api, status } = harness;
    const facet = new PodControllersFacet(status);
    const rules = [podRule('all', ['*']), podRule('jobs', ['CronJob', 'Job']), podRule('plain')].map((r) =>
      api.put('modrules', r),
    );
    for (const r of rules) status.report(r, []);
    facet.update(reportsOf(rules));
    await eventually(
      () => Array.isArray(statusOf('all').podControllers) && Array.isArray(statusOf('jobs').podControllers),
    );
    expect(statusOf('all').podControllers).toEqual([
      'Deployment',
      'StatefulSet',
      'DaemonSet',
      'ReplicaSet',
      'Job',
      'CronJob',
      'ReplicationController',
    ]);
    expect(statusOf('jobs').podControllers).toEqual(['Job', 'CronJob']);
    await eventually(() => statusOf('plain').conditions !== undefined);
    expect(statusOf('plain').podControllers).toBeUndefined();

    // A net without jobs: the rule no longer reaches them (and says so through OutsideNet elsewhere).
    const net = defaultConfigured('kubemod-system');
    const narrower = {
      ...net,
      rules: net.rules.map((r) => ({
        ...r,
        resources: r.resources.filter((x) => x !== 'jobs' && x !== 'cronjobs'),
      })),
    };
    status.report(api.get('modrules', 'team', 'jobs')!, []);
    facet.update(reportsOf(rules, narrower));
    await eventually(
      () => statusOf('jobs').podControllers === undefined || statusOf('jobs').podControllers === null,
    );
    expect(statusOf('all').podControllers).toEqual([
      'Deployment',
      'StatefulSet',
      'DaemonSet',
      'ReplicaSet',
      'ReplicationController',
    ]);
  });
});
