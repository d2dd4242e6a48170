// KubeMod-compatibility suite, patch paths, selects and placeholders: each case mirrors a behaviour pinned down by
// KubeMod's own tests or source (kubemod/kubemod core/modrulestoreitem.go calculatePatch with the evanphx/json-patch
// options, core/modrulestore_test.go "CalculatePatch" with core/testdata/**). The rules and objects here are our own;
// the comment on each case names what it mirrors.
import { JsonObject } from '../../util/json';
import {
  deployment,
  get,
  isDeployment,
  isPod,
  labels,
  lastApplied,
  patchRule,
  pod,
  pod2,
  run,
  withChanges,
} from './testing';

describe('KubeMod patch semantics (core/modrulestoreitem.go calculatePatch, evanphx options)', () => {
  // patch-11: add creates missing parents (an object, or an array for an index), -1 appends.
  test('add creates missing parents and -1 appends (patch-11)', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    path: /spec/metadata/annotations/color\n    value: whatever\n  - op: add\n    path: /spec/volumes/-1\n    value: |\n      name: scratch\n      emptyDir: {}\n  - op: add\n    path: /spec/extraThings/-1\n    value: |\n      name: hello`,
        ),
      ],
      pod,
    );
    expect(out.failures).toEqual([]);
    expect(get(out.object, 'spec.metadata.annotations.color')).toBe('whatever');
    const volumes = get(out.object, 'spec.volumes') as JsonObject[];
    expect(volumes).toHaveLength(2);
    expect(volumes[1]).toEqual({ name: 'scratch', emptyDir: {} });
    expect(get(out.object, 'spec.extraThings')).toEqual([{ name: 'hello' }]);
  });

  // evanphx SupportNegativeIndices: on add, -2 inserts before the last element; on replace/remove -1 is the last.
  test('negative indices on add, replace and remove', () => {
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: add\n    path: /spec/template/spec/containers/-2\n    value: '{name: sidecar, image: "busybox:1.36"}'\n  - op: replace\n    path: /spec/template/spec/containers/-1/image\n    value: their-repo/log-shipper:2.2\n  - op: remove\n    path: /spec/template/spec/containers/0/ports/-1`,
        ),
      ],
      deployment,
    );
    expect(out.failures).toEqual([]);
    const containers = get(out.object, 'spec.template.spec.containers') as JsonObject[];
    expect(containers.map((c) => c.name)).toEqual(['nginx', 'sidecar', 'log-shipper']);
    expect(containers[2].image).toBe('their-repo/log-shipper:2.2');
    expect(containers[0].ports).toEqual([]);
  });

  // AllowMissingPathOnRemove; replace of a missing path fails the rule (logged, skipped), other rules still apply.
  test('remove of a missing path is ignored; a failing replace drops only its rule', () => {
    const out = run(
      [
        patchRule('a-remove', isDeployment, `  - op: remove\n    path: /metadata/annotations/not-there`),
        patchRule(
          'b-replace',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/half\n    value: done\n  - op: replace\n    path: /spec/not-there\n    value: x`,
        ),
        patchRule(
          'c-add',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/ok\n    value: 'yes-really'`,
        ),
      ],
      deployment,
    );
    expect(out.failures.map((f) => f.rule.name)).toEqual(['b-replace']);
    expect(labels(out.object)).toEqual({ app: 'nginx', ok: 'yes-really' });
  });

  // patch-10: replace through a select with #0/#1 placeholders; the same change goes into last-applied.
  test('select with #0/#1 placeholders, last-applied patched too (patch-10)', () => {
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: replace\n    select: '$.spec.template.spec.containers[*].ports[? @.containerPort == 80]'\n    path: /spec/template/spec/containers/#0/ports/#1/containerPort\n    value: '8080'`,
        ),
      ],
      deployment,
    );
    expect(get(out.object, 'spec.template.spec.containers.0.ports.0.containerPort')).toBe(8080);
    expect(get(out.object, 'spec.template.spec.containers.1.ports.0.containerPort')).toBe(9100);
    expect(get(lastApplied(out.object), 'spec.template.spec.containers.0.ports.0.containerPort')).toBe(8080);
  });

  // patch-12: .SelectedItem in a template with Sprig's regexReplaceAll.
  test('.SelectedItem with regexReplaceAll (patch-12)', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: replace\n    select: '$.spec.containers[? @.image =~ "repo1/.+"].image'\n    path: /spec/containers/#0/image\n    value: '{{ regexReplaceAll "(.+)/(.*)" .SelectedItem "my-repo/\${2}" }}'`,
        ),
      ],
      pod2,
    );
    const containers = get(out.object, 'spec.containers') as JsonObject[];
    expect(containers.map((c) => c.image)).toEqual(['nginx:1.14.2', 'my-repo/exporter:0.9']);
  });

  // patch-21 (isDefined && isEmpty) and README containers-securitycontext: only matching elements are patched.
  test('filter select adds under the selected elements only (patch-21)', () => {
    const object = withChanges(deployment, (d) => {
      const containers = get(d, 'spec.template.spec.containers') as JsonObject[];
      containers[1].securityContext = {};
    });
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: add\n    select: '$.spec.template.spec.containers[? isDefined(@.securityContext) && isEmpty(@.securityContext)]'\n    path: /spec/template/spec/containers/#0/securityContext\n    value: |-\n      runAsNonRoot: true\n      capabilities:\n        drop: [ALL]`,
        ),
      ],
      object,
    );
    const containers = get(out.object, 'spec.template.spec.containers') as JsonObject[];
    expect(containers[0].securityContext).toBeUndefined();
    expect(containers[1].securityContext).toEqual({ runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
  });

  // keyPartsFromSelectKey: a select over a map captures member names; .SelectKeyParts / .#0 expose them.
  test('select over a map: #0 is the key, .#0 and .SelectKeyParts in templates', () => {
    const object = withChanges(pod, (p) => {
      (p.metadata as JsonObject).labels = { app: 'nginx', tier: 'web' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/copy-#0\n    value: '{{ .#0 }}={{ .SelectedItem }} ({{ index .SelectKeyParts 0 }})'`,
        ),
      ],
      object,
    );
    const annotations = get(out.object, 'metadata.annotations') as JsonObject;
    expect(annotations['copy-app']).toBe('app=nginx (app)');
    expect(annotations['copy-tier']).toBe('tier=web (tier)');
  });

  // keyPartsFromSelectKey (typeDetection): captured indices, and map keys strconv.Atoi accepts, are Go ints.
  test('.SelectKeyParts holds Go ints: eq, printf %d, typeOf', () => {
    const object = withChanges(pod2, (p) => {
      (p.metadata as JsonObject).annotations = { '8080': 'http', web: 'site' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          [
            `  - op: add`,
            `    select: '$.spec.containers[*]'`,
            `    path: /spec/containers/#0/env`,
            `    value: '[{name: FIRST, value: "{{ if eq .#0 0 }}yes{{ else }}no{{ end }}"}, {name: IDX, value: "{{ printf "%03d" .#0 }}"}]'`,
            `  - op: add`,
            `    select: '$.metadata.annotations[*]'`,
            `    path: /metadata/labels/type-#0`,
            `    value: '{{ typeOf .#0 }}'`,
          ].join('\n'),
        ),
      ],
      object,
    );
    expect(out.failures).toEqual([]);
    const containers = get(out.object, 'spec.containers') as JsonObject[];
    expect(containers.map((c) => c.env)).toEqual([
      [
        { name: 'FIRST', value: 'yes' },
        { name: 'IDX', value: '000' },
      ],
      [
        { name: 'FIRST', value: 'no' },
        { name: 'IDX', value: '001' },
      ],
    ]);
    expect(labels(out.object)).toMatchObject({ 'type-8080': 'int', 'type-web': 'string' });
  });

  // KubeMod pastes a captured key into the path text, so a key with "/" splits into two tokens there; we insert
  // the key as one token (docs/engine.md, our own choices).
  test('a captured key with a slash stays one path token (our own choice)', () => {
    const object = withChanges(pod, (p) => {
      (p.metadata as JsonObject).labels = { 'app.kubernetes.io/name': 'web' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/from-#0\n    value: '{{ .SelectedItem }}'`,
        ),
      ],
      object,
    );
    expect(get(out.object, 'metadata.annotations') as JsonObject).toMatchObject({
      'from-app.kubernetes.io/name': 'web',
    });
  });

  // PatchTemplateContext: without a select, .SelectedItem is nil and .SelectKeyParts is empty.
  test('.SelectedItem and .SelectKeyParts without a select', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    path: /metadata/labels/ctx\n    value: '"{{ .SelectedItem }}|{{ len .SelectKeyParts }}|{{ kindIs "invalid" .SelectedItem }}"'`,
        ),
      ],
      pod,
    );
    expect(labels(out.object).ctx).toBe('<no value>|0|true');
  });

  // README: "If select is not specified, path is rendered as-is" — #0 stays literal text.
  test('#0 without a select is literal', () => {
    const out = run(
      [patchRule('p', isPod, `  - op: add\n    path: /metadata/labels/x#0\n    value: z`)],
      pod,
    );
    expect(labels(out.object)['x#0']).toBe('z');
  });

  // {#: select} with no result generates no operation; the rule still counts as applied.
  test('select without results patches nothing', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.spec.containers[? @.name == "nope"]'\n    path: /spec/containers/#0/image\n    value: x\n  - op: add\n    select: '$.metadata.labels.missing'\n    path: /metadata/labels/seen\n    value: y`,
        ),
      ],
      pod,
    );
    expect(out.failures).toEqual([]);
    expect(out.patch).toEqual([]);
  });

  // A definite select yields one operation with empty SelectKeyParts and the value as .SelectedItem.
  test('definite select: one operation, .SelectedItem is the value', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.generateName'\n    path: /metadata/labels/origin\n    value: '{{ trimSuffix "-" .SelectedItem }}-{{ len .SelectKeyParts }}'`,
        ),
      ],
      pod,
    );
    expect(labels(out.object).origin).toBe('nginx-7c79c4bf97-0');
  });

  // remove through a select removes every selected element (KubeMod's map order is random; we go last first).
  test('remove through a select removes every selected array element', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: remove\n    select: '$.spec.tolerations[? @.key =~ "^node.kubernetes.io/"]'\n    path: /spec/tolerations/#0`,
        ),
      ],
      pod,
    );
    expect(get(out.object, 'spec.tolerations')).toEqual([]);
  });
});
