import { JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from './compile';
import { markerAnnotation } from './pod-controllers';

const modRule = (spec: JsonObject, name = 'sidecar'): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: 'default' },
  spec,
});
const compiled = (spec: JsonObject): CompiledRule => {
  const { rule, problems } = analyzeModRule(modRule(spec));
  expect(problems).toEqual([]);
  return rule as CompiledRule;
};
const problems = (spec: JsonObject) => analyzeModRule(modRule(spec)).problems;
const POD = { select: '$.kind', matchValue: 'Pod' };

describe('spec.podControllers: a Pod rule compiled into controller variants', () => {
  const rule = compiled({
    type: 'Patch',
    podControllers: ['*'],
    match: [
      POD,
      { select: '$.spec.containers[*].name', matchValue: 'sidecar', negate: true },
      { select: '$.metadata.labels.app' },
      { select: '$.metadata.namespace', matchRegex: '^team-' },
    ],
    patch: [
      { op: 'add', path: '/spec/containers/-1', value: 'name: sidecar\nimage: busybox' },
      { op: 'add', path: '/metadata/labels/team', value: '{{ .Target.metadata.labels.app }}' },
      {
        op: 'replace',
        select: '$.spec.containers[? @.image =~ "^nginx"].image',
        path: '/spec/containers/#0/image',
        value: 'mirror.example.com/nginx',
      },
    ],
  });

  it('has one variant per controller kind, pinned to its kind and apiVersion', () => {
    const variants = rule.variants ?? [];
    expect(variants.map((v) => v.podController?.kind)).toEqual([
      'Deployment',
      'StatefulSet',
      'DaemonSet',
      'ReplicaSet',
      'Job',
      'CronJob',
      'ReplicationController',
    ]);
    for (const v of variants) {
      expect([v.namespace, v.name, v.key, v.type, v.tier]).toEqual([
        'default',
        'sidecar',
        'default/sidecar',
        'Patch',
        0,
      ]);
      expect(v.match[0].select.source).toBe('$.kind');
      expect(v.match[0].matchValue).toBe(v.podController?.kind);
      // The rule's own items keep their indices; the controller's apiVersion comes after them.
      expect(v.match[4].select.source).toBe('$.apiVersion');
      expect(v.match[4].matchValue).toBe(v.podController?.apiVersion);
    }
  });

  it('moves selects, paths and placeholders under the template (CronJob one level deeper)', () => {
    const of = (kind: string) =>
      (rule.variants ?? []).find((v) => v.podController?.kind === kind) as CompiledRule;
    const deployment = of('Deployment');
    expect(deployment.match.slice(1).map((m) => m.select.source)).toEqual([
      '$.spec.template.spec.containers[*].name',
      '$.spec.template.metadata.labels.app',
      '$.metadata.namespace',
      '$.apiVersion',
      `$.spec.template.metadata.annotations["${markerAnnotation('default', 'sidecar')}"]`,
    ]);
    expect(deployment.patch.map((p) => p.path)).toEqual([
      `/spec/template/metadata/annotations/${markerAnnotation('default', 'sidecar').replace('/', '~1')}`,
      '/spec/template/spec/containers/-1',
      '/spec/template/metadata/labels/team',
      '/spec/template/spec/containers/#0/image',
    ]);
    expect(deployment.patch[3].select?.source).toBe(
      '$.spec.template.spec.containers[?((@.image =~ "^nginx"))].image',
    );
    const cron = of('CronJob');
    expect(cron.match[1].select.source).toBe('$.spec.jobTemplate.spec.template.spec.containers[*].name');
    expect(cron.patch[1].path).toBe('/spec/jobTemplate/spec/template/spec/containers/-1');
  });

  it('skips, on the Pod rule, pods whose template this rule patched (its marker annotation)', () => {
    const last = rule.match[rule.match.length - 1];
    expect(last.select.source).toBe(`$.metadata.annotations["${markerAnnotation('default', 'sidecar')}"]`);
    expect([last.matchValue, last.negate]).toEqual(['default/sidecar', true]);
    expect(rule.podController).toBeUndefined();
    // The variants skip marked templates too: a ReplicaSet a patched Deployment made, a controller seen again.
    for (const v of rule.variants ?? []) {
      const item = v.match.find((m) => m.select.source.includes('podtemplate'));
      const at = v.podController?.template.join('.');
      expect([item?.select.source, item?.matchValue, item?.negate]).toEqual([
        `$.${at}.metadata.annotations["${markerAnnotation('default', 'sidecar')}"]`,
        'default/sidecar',
        true,
      ]);
    }
  });

  it('leaves ReplicaSets a Deployment controls to the Deployment, and Jobs to their CREATE', () => {
    const of = (kind: string) =>
      (rule.variants ?? []).find((v) => v.podController?.kind === kind) as CompiledRule;
    const owned = of('ReplicaSet').match[of('ReplicaSet').match.length - 1];
    expect([owned.select.source, owned.negate]).toEqual([
      '$.metadata.ownerReferences[? @.controller == true && @.kind == "Deployment"]',
      true,
    ]);
    expect([...of('Job').operations]).toEqual(['CREATE']);
    expect([...of('Deployment').operations]).toEqual(['CREATE', 'UPDATE']);
    const updateOnly = compiled({
      type: 'Reject',
      podControllers: ['Job', 'Deployment'],
      admissionOperations: ['UPDATE', 'DELETE'],
      match: [POD],
    });
    expect(updateOnly.variants?.map((v) => [v.podController?.kind, [...v.operations]])).toEqual([
      ['Deployment', ['UPDATE', 'DELETE']],
      ['Job', ['DELETE']],
    ]);
  });

  it('replaces an apiVersion criterion in place, and a Reject rule gets no marker', () => {
    const reject = compiled({
      type: 'Reject',
      podControllers: ['Job'],
      match: [
        { select: '$.apiVersion', matchValue: 'v1' },
        { select: '$.kind == "Pod"' },
        { select: '$.spec.hostNetwork == true' },
      ],
    });
    expect(reject.match.map((m) => m.select.source)).toEqual([
      '$.apiVersion',
      '$.kind == "Pod"',
      '$.spec.hostNetwork == true',
    ]);
    const [job] = reject.variants ?? [];
    expect(job.match.map((m) => [m.select.source, m.matchValue])).toEqual([
      ['$.apiVersion', 'batch/v1'],
      ['$.kind', 'Job'],
      ['($.spec.template.spec.hostNetwork == true)', undefined],
    ]);
    expect(job.patch).toEqual([]);
  });

  it('gives marker names that fit an annotation, distinct per rule', () => {
    expect(markerAnnotation('team-a', 'sidecar')).toBe('podtemplate.modrule.io/team-a.sidecar');
    const long = markerAnnotation('team-a', 'x'.repeat(200));
    expect(long.split('/')[1].length).toBeLessThanOrEqual(63);
    expect(long).not.toBe(markerAnnotation('team-a', `${'x'.repeat(199)}y`));
    expect(long.split('/')[1]).toMatch(/^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/);
  });
});

describe('spec.podControllers refuses what cannot be moved, with the field and why', () => {
  const base = {
    type: 'Patch',
    match: [POD],
    patch: [{ op: 'add', path: '/metadata/labels/a', value: 'b' }],
  };
  it.each([
    [{ podControllers: 'Deployment' }, 'spec.podControllers', 'must be a list'],
    [{ podControllers: ['Deployment', 'Pod'] }, 'spec.podControllers[1]', 'must be one of Deployment'],
    [{ podControllers: ['*', 'Job'] }, 'spec.podControllers[0]', 'write it alone'],
    [{ podControllers: ['Job', 'Job'] }, 'spec.podControllers[1]', 'Duplicate'],
    [
      { podControllers: ['Job'], match: [{ select: '$.kind', matchValue: 'Service' }] },
      'spec.podControllers',
      'select Pods',
    ],
    [
      { podControllers: ['Job'], match: [{ select: '$.kind', matchValues: ['Pod', 'Service'] }] },
      'spec.match[0]',
      'select Pods only',
    ],
    [
      { podControllers: ['Job'], match: [POD, { select: '$.metadata.name', matchRegex: '^web' }] },
      'spec.match[1].select',
      "metadata.name is the pod's own",
    ],
    [
      { podControllers: ['Job'], match: [POD, { select: '$.status.phase' }] },
      'spec.match[1].select',
      'status',
    ],
    [
      { podControllers: ['Job'], match: [POD, { select: '$.spec.nodeName' }] },
      'spec.match[1].select',
      'nodeName',
    ],
    [
      { podControllers: ['Job'], match: [POD, { select: "$.metadata.labels['pod-template-hash']" }] },
      'spec.match[1].select',
      'added by the controller',
    ],
    [
      { podControllers: ['Job'], match: [POD, { select: '$.spec.containers[? @.name == $.metadata.name]' }] },
      'spec.match[1].select',
      'metadata.name',
    ],
    [
      { podControllers: ['Job'], match: [POD, { select: '$..uid' }] },
      'spec.match[1].select',
      'a search for uid',
    ],
    [{ podControllers: ['Job'], match: [POD, { select: '$.*' }] }, 'spec.match[1].select', 'wildcard'],
    [
      { podControllers: ['Job'], match: [POD, { select: '$.syntheticRefs.owner.kind' }] },
      'spec.match[1].select',
      'owner',
    ],
    [
      {
        podControllers: ['Job'],
        patch: [{ op: 'add', path: '/metadata/annotations/x', value: '{{ .Target.metadata.name }}' }],
      },
      'spec.patch[0].value',
      'metadata.name',
    ],
    [
      {
        podControllers: ['Job'],
        patch: [{ op: 'add', path: '/metadata/annotations/x', value: '{{ index .Target.metadata "uid" }}' }],
      },
      'spec.patch[0].value',
      'metadata.uid',
    ],
    [
      {
        podControllers: ['Job'],
        patch: [{ op: 'add', path: '/metadata/annotations/x', value: '{{ toJson .Target }}' }],
      },
      'spec.patch[0].value',
      'whole pod',
    ],
    [
      {
        podControllers: ['Job'],
        patch: [
          {
            op: 'add',
            path: '/metadata/annotations/x',
            value: '{{ with .Target.metadata }}{{ .name }}{{ end }}',
          },
        ],
      },
      'spec.patch[0].value',
      'metadata whole',
    ],
    [
      {
        podControllers: ['Job'],
        patch: [{ op: 'add', select: '$.metadata.labels[*]', path: '/metadata/#0/x', value: 'y' }],
      },
      'spec.patch[0].path',
      'a placeholder where the path names the pod',
    ],
    [
      { podControllers: ['Job'], patch: [{ op: 'add', path: '/status/phase', value: 'x' }] },
      'spec.patch[0].path',
      'status',
    ],
    [
      { podControllers: ['Job'], patch: [{ op: 'add', path: '/metadata/name', value: 'x' }] },
      'spec.patch[0].path',
      'metadata.name',
    ],
    [
      {
        podControllers: ['Job'],
        type: 'Reject',
        patch: undefined,
        rejectMessage: 'pod {{ .Target.metadata.name }}',
      },
      'spec.rejectMessage',
      'metadata.name',
    ],
  ])('%j', (extra, field, message) => {
    const spec = { ...base, ...extra } as JsonObject;
    const found = problems(spec);
    expect(found).toContainEqual({ field, message: expect.stringContaining(message) as unknown as string });
  });

  it('takes the Pod rule as it is without podControllers (opt-in: KubeMod rules unchanged)', () => {
    const plain = compiled({ ...base, match: [POD, { select: '$.metadata.name', matchRegex: '^web' }] });
    expect(plain.variants).toBeUndefined();
    expect(plain.match).toHaveLength(2);
  });

  it('accepts what a template answers: its spec whole, labels, namespace, kind', () => {
    const ok = compiled({
      ...base,
      podControllers: ['Deployment'],
      patch: [
        {
          op: 'add',
          path: '/metadata/annotations/x',
          value:
            '{{ .Target.kind }}/{{ .Target.metadata.namespace }}/{{ toJson .Target.spec }}/{{ .Namespace }}',
        },
      ],
    });
    expect(ok.variants).toHaveLength(1);
  });
});
