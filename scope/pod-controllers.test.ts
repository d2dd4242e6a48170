import { request, rule, scopeOf, sends } from './testing';

// A Pod rule with spec.podControllers acts on the controllers' writes too: the dragnet must be sent them.
describe('the scope of a Pod rule reaching pod controllers', () => {
  const spec = (podControllers: string[]) => ({
    type: 'Patch',
    podControllers,
    match: [{ select: '$.kind', matchValue: 'Pod' }],
    patch: [{ op: 'add', path: '/metadata/labels/team', value: 'a' }],
  });
  const CONTROLLERS = [
    'Deployment',
    'StatefulSet',
    'DaemonSet',
    'ReplicaSet',
    'Job',
    'CronJob',
    'ReplicationController',
  ];

  it("sends the CREATE and UPDATE of every controller kind named, in the rule's namespace only", () => {
    const result = scopeOf([rule('team-a', 'r', spec(['*']))]);
    for (const kind of ['Pod', ...CONTROLLERS]) {
      expect(sends(result, request('CREATE', kind, 'team-a'))).toBe(true);
      // A Job's template is immutable: its variant acts on CREATE only.
      expect(sends(result, request('UPDATE', kind, 'team-a'))).toBe(kind !== 'Job');
      expect(sends(result, request('DELETE', kind, 'team-a'))).toBe(false);
      expect(sends(result, request('CREATE', kind, 'team-b'))).toBe(false);
    }
    expect(sends(result, request('CREATE', 'ConfigMap', 'team-a'))).toBe(false);
    const resources = result.registration.rules.flatMap((r) =>
      r.apiGroups.map((g) => `${g}:${r.resources.join(',')}`),
    );
    expect(resources.sort()).toEqual([
      ':pods,replicationcontrollers',
      'apps:daemonsets,deployments,replicasets,statefulsets',
      'batch:cronjobs',
      'batch:jobs',
    ]);
  });

  it('sends only the controllers named, and reports each variant by its kind', () => {
    const result = scopeOf([rule('team-a', 'r', spec(['Deployment', 'CronJob']))]);
    expect(sends(result, request('CREATE', 'Deployment', 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'CronJob', 'team-a'))).toBe(true);
    expect(sends(result, request('CREATE', 'Job', 'team-a'))).toBe(false);
    expect(sends(result, request('CREATE', 'StatefulSet', 'team-a'))).toBe(false);
    expect(result.rules.map((r) => [r.rule, r.controller ?? null, r.resources.join(',')])).toEqual([
      ['team-a/r', null, 'core/pods'],
      ['team-a/r', 'Deployment', 'apps/deployments'],
      ['team-a/r', 'CronJob', 'batch/cronjobs'],
    ]);
  });

  it('sends the controllers of a rule given alone (admitted a moment ago, before the store lists its variants)', () => {
    const alone = rule('team-a', 'r', spec(['Job']));
    const result = scopeOf([alone]);
    expect(sends(result, request('CREATE', 'Job', 'team-a'))).toBe(true);
    expect(sends(result, request('UPDATE', 'Job', 'team-a'))).toBe(false);
    // The store lists the variants beside their rule: they count once.
    const listed = scopeOf([alone, ...(alone.variants ?? [])]);
    expect(listed.rules).toHaveLength(2);
    expect(listed.registration).toEqual(result.registration);
  });

  it('leaves a Pod rule without podControllers as it was (pods only)', () => {
    const result = scopeOf([rule('team-a', 'r', spec([]))]);
    expect(sends(result, request('CREATE', 'Deployment', 'team-a'))).toBe(false);
    expect(sends(result, request('CREATE', 'Pod', 'team-a'))).toBe(true);
  });
});
