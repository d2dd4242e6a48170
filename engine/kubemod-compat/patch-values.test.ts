// KubeMod-compatibility suite, patch values (YAML 1.1) and their templates: each case mirrors a behaviour pinned down
// by KubeMod's own tests or source (kubemod/kubemod core/modrulestoreitem.go calculatePatch and
// modRuleValueToJSONValue, util/template.go). The rules and objects here are our own; the comment on each case names
// what it mirrors.
import { JsonValue } from '../../util/json';
import { deployment, get, isDeployment, labels, namespaceObj, patchRule, run } from './testing';

describe('KubeMod patch semantics (core/modrulestoreitem.go calculatePatch, evanphx options)', () => {
  // modRuleValueToJSONValue = sigs.k8s.io/yaml YAMLToJSON (YAML 1.1 via go-yaml v2).
  const values: Array<[string, JsonValue]> = [
    [`'8080'`, 8080],
    [`'"8080"'`, '8080'],
    [`'false'`, false],
    [`'"false"'`, 'false'],
    [`hello`, 'hello'],
    [`'null'`, null],
    [`'~'`, null],
    [`'yes'`, true],
    [`'off'`, false],
    // go-yaml v2 also resolves y/n as booleans.
    [`y`, true],
    [`'N'`, false],
    [`'"yes"'`, 'yes'],
    [`'0777'`, 511],
    [`'0x1F'`, 31],
    [`'1.5'`, 1.5],
    [`'[a, 2]'`, ['a', 2]],
    [`'{a: 1}'`, { a: 1 }],
    [`'2026-11-23'`, '2026-11-23'],
    [`'{{ "8080" }}'`, 8080],
    [`'"{{ .Namespace }}"'`, 'default'],
    [`'{{ .Target.spec.replicas }}'`, 2],
    [`'{{ if false }}x{{ end }}'`, null],
  ];
  test.each(values)('value %s is YAML %j', (value, want) => {
    const out = run(
      [patchRule('p', isDeployment, `  - op: add\n    path: /metadata/annotations/v\n    value: ${value}`)],
      deployment,
    );
    expect(out.failures).toEqual([]);
    expect(get(out.object, 'metadata.annotations.v')).toEqual(want);
  });

  // A rendered value that is not valid YAML fails the rule (calculatePatch returns the error; the rule is skipped).
  test('a rendered value that is not YAML fails only that rule', () => {
    const out = run(
      [
        patchRule(
          'bad',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/bad\n    value: '{{ "a: b: c" }}'`,
        ),
        patchRule(
          'good',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/good\n    value: 'yes-it-is'`,
        ),
      ],
      deployment,
    );
    expect(out.failures.map((f) => f.rule.name)).toEqual(['bad']);
    expect(labels(out.object)).toEqual({ app: 'nginx', good: 'yes-it-is' });
  });

  // A template error at run time fails the rule (Execute returns an error).
  test('a template failing at run time fails only that rule', () => {
    const out = run(
      [
        patchRule(
          'bad',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/bad\n    value: '{{ fail "no" }}'`,
        ),
      ],
      deployment,
    );
    expect(out.failures.map((f) => f.rule.name)).toEqual(['bad']);
    expect(out.patch).toEqual([]);
  });

  // Template context: .Target holds the object with syntheticRefs, .Namespace the request namespace.
  test('.Target sees syntheticRefs.namespace and .Namespace is the namespace', () => {
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/flavor\n    value: '{{ .Target.syntheticRefs.namespace.metadata.labels.flavor }}-{{ .Namespace }}'`,
        ),
      ],
      deployment,
      { cluster: [namespaceObj] },
    );
    expect(labels(out.object).flavor).toBe('vanilla-default');
    expect(out.object?.syntheticRefs).toBeUndefined();
  });
});
