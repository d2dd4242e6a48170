import { compileJsonPath } from '../jsonpath';
import { JsonObject } from '../util/json';
import { compileModRule } from './compile';
import { MAX_OWNER_LEVELS, ownerReads } from './reads';
import { ModRule } from './types';

const reads = (selects: string[], templates: string[] = []) =>
  ownerReads(
    selects.map((s) => compileJsonPath(s).ast),
    templates,
  );

describe('which rules read syntheticRefs.owner', () => {
  test.each([
    ['$.syntheticRefs.owner.metadata.labels.team', 1, 'metadata'],
    ["$['syntheticRefs']['owner']['metadata']['name']", 1, 'metadata'],
    ['$.syntheticRefs.owner.kind', 1, 'metadata'],
    ['$.syntheticRefs.owner.spec.replicas', 1, 'all'],
    ['$.syntheticRefs.owner.syntheticRefs.owner.metadata.labels', 2, 'metadata'],
    ['$.syntheticRefs.owner.metadata.ownerReferences[?(@.kind == "Deployment")]', 1, 'metadata'],
    ['$.syntheticRefs.owner', MAX_OWNER_LEVELS, 'all'],
    ['$.syntheticRefs.*', MAX_OWNER_LEVELS, 'all'],
    ['$.syntheticRefs', MAX_OWNER_LEVELS, 'all'],
    ['$.spec.containers[? @.name == $.syntheticRefs.owner.metadata.name]', 1, 'metadata'],
  ])('%s: %i level(s), %s', (select, levels, fields) => {
    expect(reads([select])).toEqual({ levels, fields });
  });

  test.each([
    '$.syntheticRefs.namespace.metadata.labels',
    '$.syntheticRefs.node.metadata.labels',
    '$..image',
    '$.*',
    '$.metadata.ownerReferences[*].name',
  ])('%s does not read the owner', (select) => {
    expect(reads([select]).levels).toBe(0);
  });

  test.each([
    ['{{ .Target.syntheticRefs.owner.metadata.labels.team }}', 1, 'metadata'],
    ['{{ index .Target.syntheticRefs.owner.metadata.labels "app.kubernetes.io/name" }}', 1, 'metadata'],
    ['{{ index .Target.syntheticRefs "owner" "metadata" "name" }}', 1, 'metadata'],
    ['{{ $.Target.syntheticRefs.owner.syntheticRefs.owner.metadata.name }}', 2, 'metadata'],
    ['{{ with .Target.syntheticRefs.owner }}{{ .metadata.name }}{{ end }}', MAX_OWNER_LEVELS, 'all'],
    ['{{ toJson .Target.syntheticRefs.owner }}', MAX_OWNER_LEVELS, 'all'],
    ['{{ .Target.syntheticRefs.owner.spec.schedule | quote }}', 1, 'all'],
    [
      '{{ define "x" }}{{ .Target.syntheticRefs.owner.metadata.name }}{{ end }}{{ template "x" . }}',
      1,
      'metadata',
    ],
  ])('template %s: %i level(s), %s', (template, levels, fields) => {
    expect(reads([], [template])).toEqual({ levels, fields });
  });

  test.each([
    '{{ .Target.metadata.name }}',
    '{{ toJson .Target }}',
    '{{ .Target.syntheticRefs.namespace.metadata.name }}',
  ])('template %s does not read the owner', (template) => {
    expect(reads([], [template]).levels).toBe(0);
  });

  test('on a compiled rule: match, patch selects, values and rejectMessage all count; the deepest read wins', () => {
    const rule = (spec: JsonObject) =>
      compileModRule({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'r', namespace: 'team-a' },
        spec,
      } as unknown as ModRule);
    expect(
      rule({
        type: 'Patch',
        match: [{ select: '$.syntheticRefs.owner.metadata.labels.team' }],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/deployment',
            value: '{{ .Target.syntheticRefs.owner.syntheticRefs.owner.metadata.name }}',
          },
        ],
      }).references,
    ).toEqual({ named: [], owner: { levels: 2, fields: 'metadata' }, secrets: false });
    expect(
      rule({
        type: 'Reject',
        match: [{ select: '$.kind', matchValue: 'Pod' }],
        rejectMessage: 'owned by {{ .Target.syntheticRefs.owner.spec.selector }}',
      }).references?.owner,
    ).toEqual({ levels: 1, fields: 'all' });
    expect(
      rule({
        type: 'Patch',
        match: [{ select: '$.syntheticRefs.namespace.metadata.labels.team' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '{{ toJson .Target }}' }],
      }).references,
    ).toBeUndefined();
  });
});
