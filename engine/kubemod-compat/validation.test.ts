// KubeMod-compatibility suite, validation: each case mirrors a behaviour pinned down by KubeMod's own tests or source
// (kubemod/kubemod api/v1beta1/modrule_webhook.go validateModRule and the CRD schema, util/template_test.go). The rules
// and objects here are our own; the comment on each case names what it mirrors.
import { JsonObject } from '../../util/json';
import { validateModRule } from '../../rule/validate';
import { get, isPod, modrule, parseRule, patchRule, pod, run, withChanges } from './testing';

describe('KubeMod validation', () => {
  const cases: Array<{ name: string; spec: string; fields: string[] }> = [
    { name: 'unrecognized type', spec: `type: Mutate\n${isPod}`, fields: ['spec.type'] },
    // "field 'patch' cannot be empty for ModRules of type Patch"
    { name: 'Patch without patch', spec: `type: Patch\n${isPod}`, fields: ['spec.patch'] },
    // "field 'patch' should be present only for ModRules of type Patch"
    {
      name: 'Reject with patch',
      spec: `type: Reject\n${isPod}\npatch:\n  - op: remove\n    path: /a`,
      fields: ['spec.patch'],
    },
    // "field 'rejectMessage' should be present only for ModRules of type Reject"
    {
      name: 'Patch with rejectMessage',
      spec: `type: Patch\nrejectMessage: no\n${isPod}\npatch:\n  - op: remove\n    path: /a`,
      fields: ['spec.rejectMessage'],
    },
    // "spec.match[].select in body must be non-empty string"
    { name: 'empty select', spec: `type: Reject\nmatch:\n  - select: ''`, fields: ['spec.match[0].select'] },
    {
      name: 'select that does not parse',
      spec: `type: Reject\nmatch:\n  - select: '$.spec[?'`,
      fields: ['spec.match[0].select'],
    },
    {
      name: 'bad matchRegex',
      spec: `type: Reject\nmatch:\n  - select: $.kind\n    matchRegex: '(x'`,
      fields: ['spec.match[0].matchRegex'],
    },
    // "unrecognized matchFor value"
    {
      name: 'bad matchFor',
      spec: `type: Reject\nmatch:\n  - select: $.kind\n    matchFor: Some`,
      fields: ['spec.match[0].matchFor'],
    },
    {
      name: 'bad value template',
      spec: `type: Patch\n${isPod}\npatch:\n  - op: add\n    path: /a\n    value: '{{ .Target'`,
      fields: ['spec.patch[0].value'],
    },
    {
      name: 'bad patch select',
      spec: `type: Patch\n${isPod}\npatch:\n  - op: add\n    select: '$.a[?'\n    path: /a\n    value: x`,
      fields: ['spec.patch[0].select'],
    },
    // util.NewSafeTemplate: unknown functions do not parse.
    {
      name: 'unknown template function',
      spec: `type: Patch\n${isPod}\npatch:\n  - op: add\n    path: /a\n    value: '{{ nosuchfunc 1 }}'`,
      fields: ['spec.patch[0].value'],
    },
    // CRD: match minItems 1, executionTier int16 range.
    { name: 'empty match', spec: `type: Reject\nmatch: []`, fields: ['spec.match'] },
    {
      name: 'tier out of range',
      spec: `type: Reject\nexecutionTier: 40000\n${isPod}`,
      fields: ['spec.executionTier'],
    },
    { name: 'valid Reject', spec: `type: Reject\n${isPod}`, fields: [] },
    {
      name: 'valid Patch with every field',
      spec: `type: Patch\nexecutionTier: -5\nadmissionOperations: [CREATE, DELETE]\ntargetNamespaceRegex: '.*'\nmatch:\n  - select: $.kind\n    matchValues: [Pod]\n    matchFor: All\n    negate: false\npatch:\n  - op: add\n    select: '$.spec.containers[*]'\n    path: /spec/containers/#0/x\n    value: '{{ .#0 }}'`,
      fields: [],
    },
  ];

  test.each(cases)('$name', ({ spec, fields }) => {
    expect(validateModRule(parseRule(modrule('v', spec))).map((p) => p.field)).toEqual(fields);
  });

  // util/template_test.go: ".#0.#2" becomes "(index .SelectKeyParts 0)(index .SelectKeyParts 2)" everywhere in
  // the value in KubeMod, also outside actions; modrule rewrites inside actions only (docs/engine.md).
  test('.#N shorthand in value templates', () => {
    const object = withChanges(pod, (p) => {
      (p.metadata as JsonObject).labels = { a: '1' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/t\n    value: '{{ print "key-" }}{{.#0}}'\n  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/c\n    value: 'v.#0'`,
        ),
      ],
      object,
    );
    expect(get(out.object, 'metadata.annotations.t')).toBe('key-a');
    // A value without {{ is a constant here; KubeMod would print "v(index .SelectKeyParts 0)" (docs/engine.md).
    expect(get(out.object, 'metadata.annotations.c')).toBe('v.#0');
  });
});
