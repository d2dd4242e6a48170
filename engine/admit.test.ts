import fc from 'fast-check';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import { escapeToken } from '../patch/pointer';
import { RuleStore } from '../store/rules';
import { AdmissionOutcome } from './admit';
import { stableStringify } from './stable-stringify';
import { admitChecked, storeFromYaml } from './testing';

const storeWith = (
  rules: string,
  options: { clusterNamespace?: string; cluster?: JsonObject[] } = {},
): RuleStore => storeFromYaml(rules, options);
const run = admitChecked;

function labels(o: JsonObject | null): JsonObject {
  return ((o?.metadata as JsonObject).labels ?? {}) as JsonObject;
}

function annotations(o: JsonObject | null): JsonObject {
  return ((o?.metadata as JsonObject).annotations ?? {}) as JsonObject;
}

const rule = (name: string, body: string, extraMeta = ''): string =>
  `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: ${name}\n${extraMeta}spec:\n${body
    .trim()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n')}\n`;

const labelRule = (name: string, extra: string, when: string, set: string): string =>
  rule(
    name,
    `
type: Patch
${extra}
match:
  - select: '$.kind'
    matchValue: Deployment
${when}
patch:
${set}`,
  );

describe('admit: patches', () => {
  test('a matching Patch rule patches, others do not', () => {
    const store = storeWith(
      labelRule('a', '', '', `  - op: add\n    path: /metadata/labels/color\n    value: blue`) +
        '---\n' +
        rule(
          'b',
          `type: Patch\nmatch:\n  - select: '$.kind'\n    matchValue: Pod\npatch:\n  - op: add\n    path: /metadata/labels/x\n    value: y`,
        ),
    );
    const out = run(store, loadFixture('deployment'));
    expect(out.allowed).toBe(true);
    expect(labels(out.object)).toEqual({ app: 'nginx', color: 'blue' });
    expect(out.matched).toEqual([{ namespace: 'default', name: 'a' }]);
    expect(out.patch.some((op) => op.path === '/metadata/labels/color')).toBe(true);
  });

  test('nothing matches: no patch, the same object', () => {
    const store = storeWith(
      labelRule(
        'a',
        '',
        `  - select: '$.metadata.labels.app'\n    matchValue: other`,
        `  - op: add\n    path: /metadata/labels/c\n    value: d`,
      ),
    );
    const d = loadFixture('deployment');
    const out = run(store, d);
    expect(out.patch).toEqual([]);
    expect(out.object).toBe(d);
    expect(out.matched).toEqual([]);
  });

  test('values: number, quoted string, boolean, YAML block, template', () => {
    const store = storeWith(
      labelRule(
        'v',
        '',
        '',
        `
  - op: add
    path: /spec/replicas
    value: '3'
  - op: add
    path: /metadata/annotations/port
    value: '"8080"'
  - op: add
    path: /spec/paused
    value: 'false'
  - op: add
    path: /spec/template/spec/securityContext
    value: |-
      runAsUser: 101
      runAsNonRoot: true
  - op: add
    path: /metadata/annotations/owner
    value: '{{ .Target.metadata.name }}-{{ .Namespace }}'`,
      ),
    );
    const out = run(store, loadFixture('deployment'));
    const spec = out.object?.spec as JsonObject;
    expect(spec.replicas).toBe(3);
    expect(spec.paused).toBe(false);
    expect((spec.template as JsonObject).spec).toMatchObject({
      securityContext: { runAsUser: 101, runAsNonRoot: true },
    });
    expect(annotations(out.object)).toMatchObject({ port: '8080', owner: 'nginx-default' });
  });

  test('select with #N placeholders patches every result (README ports example)', () => {
    const containers = ['c1', 'c2', 'c3', 'c4'].map((name, i) => ({
      name,
      image: 'nginx',
      ports:
        i === 1
          ? [{ containerPort: 100 }, { containerPort: 80 }]
          : i === 3
            ? [{ containerPort: 80 }, { containerPort: 200 }]
            : [{ containerPort: 100 }],
    }));
    const d = loadFixture('deployment');
    ((d.spec as JsonObject).template as JsonObject).spec = { containers };
    const store = storeWith(
      labelRule(
        'ports',
        '',
        '',
        `
  - op: replace
    select: '$.spec.template.spec.containers[*].ports[? @.containerPort == 80]'
    path: '/spec/template/spec/containers/#0/ports/#1/containerPort'
    value: '8080'`,
      ),
    );
    const out = run(store, d);
    const got = (((out.object?.spec as JsonObject).template as JsonObject).spec as JsonObject)
      .containers as JsonObject[];
    expect(got.map((c) => (c.ports as JsonObject[]).map((p) => p.containerPort))).toEqual([
      [100],
      [100, 8080],
      [100],
      [8080, 200],
    ]);
    expect(out.patch.map((p) => p.path).sort()).toEqual([
      '/spec/template/spec/containers/1/ports/1/containerPort',
      '/spec/template/spec/containers/3/ports/0/containerPort',
    ]);
  });

  test('select with SelectedItem rewrites each image (README advanced SelectedItem)', () => {
    const store = storeWith(
      rule(
        'repo',
        `
type: Patch
match:
  - select: '$.kind'
    matchValue: Deployment
patch:
  - op: replace
    select: '$.spec.template.spec.containers[? @.image =~ "their-repo/.+"].image'
    path: /spec/template/spec/containers/#0/image
    value: '{{ regexReplaceAll "(.+)/(.*)" .SelectedItem "my-repo/\${2}" }}'`,
      ),
    );
    const out = run(store, loadFixture('deployment'));
    const containers = (((out.object?.spec as JsonObject).template as JsonObject).spec as JsonObject)
      .containers as JsonObject[];
    expect(containers.map((c) => c.image)).toEqual(['nginx:1.14.2', 'my-repo/log-shipper:2.1']);
  });

  test('remove with a select removes every result, indices stay valid', () => {
    const d = loadFixture('deployment');
    const c0 = (
      (((d.spec as JsonObject).template as JsonObject).spec as JsonObject).containers as JsonObject[]
    )[0];
    c0.env = [
      { name: 'DEBUG', value: '1' },
      { name: 'KEEP', value: 'a' },
      { name: 'DEBUG_X', value: '2' },
      { name: 'DEBUG_Y', value: '3' },
    ];
    const store = storeWith(
      labelRule(
        'strip-debug',
        '',
        '',
        `
  - op: remove
    select: '$.spec.template.spec.containers[*].env[? @.name =~ "^DEBUG"]'
    path: /spec/template/spec/containers/#0/env/#1`,
      ),
    );
    const out = run(store, d);
    const env = (
      (((out.object?.spec as JsonObject).template as JsonObject).spec as JsonObject)
        .containers as JsonObject[]
    )[0].env;
    expect(env).toEqual([{ name: 'KEEP', value: 'a' }]);
  });

  test('managedFields are hidden from rules and kept in the result', () => {
    const store = storeWith(
      labelRule(
        'mf',
        '',
        `  - select: '$.metadata.managedFields'\n    negate: true`,
        `  - op: add\n    path: /metadata/labels/seen\n    value: 'no-managed-fields'`,
      ),
    );
    const d = loadFixture('deployment');
    const out = run(store, d);
    expect(labels(out.object).seen).toBe('no-managed-fields');
    expect((out.object?.metadata as JsonObject).managedFields).toEqual(
      (d.metadata as JsonObject).managedFields,
    );
    expect(out.patch.every((op) => !op.path.includes('managedFields'))).toBe(true);
  });

  test('idempotent rules change nothing the second time', () => {
    const store = storeWith(
      labelRule(
        'idem',
        '',
        `  - select: '$.spec.template.spec.containers[*].name'\n    matchValue: my-sidecar\n    negate: true`,
        `
  - op: add
    path: /metadata/labels/color
    value: blue
  - op: add
    path: /spec/template/spec/containers/-1
    value: |-
      name: my-sidecar
      image: alpine:3`,
      ),
    );
    const first = run(store, loadFixture('deployment'));
    expect(first.patch.length).toBeGreaterThan(0);
    const second = run(store, first.object);
    expect(second.patch).toEqual([]);
    expect(second.object).toEqual(first.object);
  });
});

describe('admit: tiers', () => {
  // KubeMod's own tier tests (core/testdata/modrules/patch/patch-29..31).
  const tiers =
    labelRule(
      'modrule-29',
      'executionTier: -1',
      `  - select: '$.metadata.labels.color'\n    matchValue: blue`,
      `  - op: add\n    path: /metadata/labels/color\n    value: red`,
    ) +
    '---\n' +
    labelRule(
      'modrule-30',
      '',
      `  - select: '$.metadata.labels.color'\n    matchValue: red`,
      `  - op: add\n    path: /metadata/labels/flavor\n    value: apple`,
    ) +
    '---\n' +
    labelRule(
      'modrule-31',
      'executionTier: 1',
      `  - select: '$.metadata.labels.color'\n    matchValue: red`,
      `  - op: add\n    path: /metadata/labels/size\n    value: medium\n  - op: add\n    path: /metadata/labels/color\n    value: orange`,
    );
  const blue = (): JsonObject => {
    const d = loadFixture('deployment');
    (d.metadata as JsonObject).labels = { app: 'nginx', color: 'blue' };
    return d;
  };

  test('each tier sees the previous tier result', () => {
    const out = run(storeWith(tiers), blue());
    expect(labels(out.object)).toEqual({ app: 'nginx', color: 'orange', flavor: 'apple', size: 'medium' });
    expect(out.matched.map((m) => m.name)).toEqual(['modrule-29', 'modrule-30', 'modrule-31']);
  });

  test('rules of one tier match against the tier input, not each other', () => {
    const store = storeWith(
      labelRule('a', '', '', `  - op: add\n    path: /metadata/labels/step\n    value: one`) +
        '---\n' +
        labelRule(
          'b',
          '',
          `  - select: '$.metadata.labels.step'\n    matchValue: one`,
          `  - op: add\n    path: /metadata/labels/same-tier\n    value: saw-it`,
        ) +
        '---\n' +
        labelRule(
          'c',
          'executionTier: 5',
          `  - select: '$.metadata.labels.step'\n    matchValue: one`,
          `  - op: add\n    path: /metadata/labels/next-tier\n    value: saw-it`,
        ),
    );
    const out = run(store, loadFixture('deployment'));
    expect(labels(out.object)).toEqual({ app: 'nginx', step: 'one', 'next-tier': 'saw-it' });
  });

  test('within a tier, rules apply in namespace/name order and see earlier ones (deterministic)', () => {
    const store = storeWith(
      labelRule(
        'z-last',
        '',
        '',
        `  - op: add\n    path: /metadata/labels/who\n    value: '{{ .Target.metadata.labels.who }}+z'`,
      ) +
        '---\n' +
        labelRule('a-first', '', '', `  - op: add\n    path: /metadata/labels/who\n    value: a`),
    );
    expect(labels(run(store, loadFixture('deployment')).object).who).toBe('a+z');
  });
});

describe('admit: operations and DELETE', () => {
  const store = storeWith(
    rule(
      'no-delete',
      `type: Reject\nadmissionOperations: [DELETE]\nrejectMessage: 'deleting {{ .Target.metadata.name }} is not allowed'\nmatch:\n  - select: '$.metadata.labels.protected'\n    matchValue: 'yes'`,
    ) +
      '---\n' +
      rule(
        'patch-on-delete',
        `type: Patch\nadmissionOperations: [DELETE]\nmatch:\n  - select: '$.kind'\npatch:\n  - op: add\n    path: /metadata/labels/x\n    value: y`,
      ) +
      '---\n' +
      rule(
        'update-only',
        `type: Patch\nadmissionOperations: [UPDATE]\nmatch:\n  - select: '$.kind'\npatch:\n  - op: add\n    path: /metadata/labels/updated\n    value: 'true'`,
      ),
  );
  const protectedDeployment = (): JsonObject => {
    const d = loadFixture('deployment');
    (d.metadata as JsonObject).labels = { app: 'nginx', protected: 'yes' };
    return d;
  };

  test('DELETE matches the old object; DELETE Patch rules run (for Reject rules) but no patch is returned', () => {
    const out = run(store, null, { operation: 'DELETE', oldObject: protectedDeployment() });
    expect(out.allowed).toBe(false);
    expect(out.rejections).toEqual([
      { rule: { namespace: 'default', name: 'no-delete' }, message: 'deleting nginx is not allowed' },
    ]);
    expect(out.patch).toEqual([]);
    expect(out.object).toBeNull();
    expect(out.matched.map((m) => m.name)).toEqual(['patch-on-delete', 'no-delete']);
  });

  test('DELETE of an unprotected object is allowed', () => {
    const out = run(store, null, { operation: 'DELETE', oldObject: loadFixture('deployment') });
    expect(out.allowed).toBe(true);
    expect(out.patch).toEqual([]);
  });

  test('CREATE does not run DELETE- or UPDATE-only rules', () => {
    const out = run(store, protectedDeployment());
    expect(out.allowed).toBe(true);
    expect(out.patch).toEqual([]);
  });

  test('UPDATE runs UPDATE rules', () => {
    const d = loadFixture('deployment');
    const out = run(store, d, { operation: 'UPDATE', oldObject: d });
    expect(labels(out.object).updated).toBe(true);
  });
});

describe('admit: rejections', () => {
  const store = storeWith(
    rule(
      'reject-root',
      `type: Reject\nrejectMessage: 'All workloads must run as non-root user'\nmatch:\n  - select: '$.kind'\n    matchValues: [Deployment, StatefulSet]\n  - select: '$.spec.template.spec.securityContext.runAsNonRoot == true'\n    negate: true`,
    ) +
      '---\n' +
      rule(
        'reject-silent',
        `type: Reject\nmatch:\n  - select: '$.metadata.labels.app'\n    matchValue: nginx`,
      ) +
      '---\n' +
      rule(
        'reject-broken-message',
        `type: Reject\nrejectMessage: '{{ .Target.metadata.name | fail }}'\nmatch:\n  - select: '$.kind'\n    matchValue: Deployment`,
      ),
  );

  test('every matching Reject rule is reported; broken messages still reject', () => {
    const out = run(store, loadFixture('deployment'));
    expect(out.allowed).toBe(false);
    expect(out.patch).toEqual([]);
    expect(out.rejections.map((r) => [r.rule.name, r.message])).toEqual([
      ['reject-broken-message', ''],
      ['reject-root', 'All workloads must run as non-root user'],
      ['reject-silent', ''],
    ]);
    expect(out.failures.map((f) => f.rule.name)).toEqual(['reject-broken-message']);
  });

  test('Reject rules see the patched object (a lower... any tier patch can make it compliant)', () => {
    const fixed = storeWith(
      rule(
        'reject-root',
        `type: Reject\nexecutionTier: -5\nmatch:\n  - select: '$.spec.template.spec.securityContext.runAsNonRoot == true'\n    negate: true`,
      ) +
        '---\n' +
        labelRule(
          'enforce',
          'executionTier: 10',
          '',
          `  - op: add\n    path: /spec/template/spec/securityContext/runAsNonRoot\n    value: 'true'`,
        ),
    );
    const out = run(fixed, loadFixture('deployment'));
    expect(out.allowed).toBe(true);
    expect(out.patch.filter((op) => !op.path.includes('last-applied'))).toEqual([
      { op: 'add', path: '/spec/template/spec/securityContext/runAsNonRoot', value: true },
    ]);
  });
});

describe('admit: scope', () => {
  const wide = (name: string, regex: string | null): string =>
    rule(
      name,
      `type: Patch\n${regex === null ? '' : `targetNamespaceRegex: '${regex}'\n`}match:\n  - select: '$.metadata.name'\npatch:\n  - op: add\n    path: /metadata/labels/${name}\n    value: 'ok'`,
      '  namespace: kubemod-system\n',
    );
  const store = storeWith(
    [
      wide('team', '^team-'),
      wide('all', '.*'),
      wide('cluster-only', null),
      wide('empty-regex', ''),
      rule(
        'own',
        `type: Patch\nmatch:\n  - select: '$.kind'\npatch:\n  - op: add\n    path: /metadata/labels/own\n    value: 'ok'`,
        '  namespace: team-a\n',
      ),
    ].join('---\n'),
  );
  const names = new Set(['team', 'all', 'cluster-only', 'empty-regex', 'own']);
  const applied = (o: AdmissionOutcome): string[] =>
    Object.keys(labels(o.object))
      .filter((k) => names.has(k))
      .sort();

  test.each([
    ['team-a', ['all', 'own', 'team']],
    ['team-b', ['all', 'team']],
    ['default', ['all']],
    ['ateam-x', ['all']],
  ])('namespaced object in %s', (ns, expected) => {
    const d = loadFixture('deployment');
    (d.metadata as JsonObject).namespace = ns;
    expect(applied(run(store, d, { namespace: ns }))).toEqual(expected);
  });

  test('cluster-scoped objects get cluster-namespace rules with no regex or one matching ""', () => {
    const ns = loadFixture('namespace');
    // An UPDATE of a Namespace carries its own name as namespace: still cluster-scoped (KubeMod does the same).
    expect(applied(run(store, ns, { namespace: 'default', operation: 'UPDATE', oldObject: ns }))).toEqual([
      'all',
      'cluster-only',
      'empty-regex',
    ]);
    expect(applied(run(store, loadFixture('node'), { namespace: null }))).toEqual([
      'all',
      'cluster-only',
      'empty-regex',
    ]);
  });

  test('a custom cluster namespace', () => {
    const custom = storeWith(
      rule(
        'w',
        `type: Reject\ntargetNamespaceRegex: '.*'\nmatch:\n  - select: '$.kind'`,
        '  namespace: platform\n',
      ),
      {
        clusterNamespace: 'platform',
      },
    );
    expect(run(custom, loadFixture('deployment')).allowed).toBe(false);
    expect(run(store, loadFixture('deployment')).allowed).toBe(true);
  });

  test('ignored namespaces are not evaluated', () => {
    const ns = loadFixture('namespace');
    (ns.metadata as JsonObject).labels = { 'admission.kubemod.io/ignore': 'true' };
    const ignoring = storeWith(wide('all', '.*'), { cluster: [ns] });
    const out = run(ignoring, loadFixture('deployment'));
    expect(out).toMatchObject({ ignored: true, allowed: true, patch: [], matched: [] });
    // A Namespace object carrying the label is itself ignored.
    expect(run(ignoring, ns, { namespace: null }).ignored).toBe(true);
    expect(run(ignoring, loadFixture('namespace'), { namespace: null }).ignored).toBe(false);
  });
});

describe('admit: syntheticRefs', () => {
  const flavor = rule(
    'add-flavor',
    `type: Patch\ntargetNamespaceRegex: ".*"\nmatch:\n  - select: '$.kind'\n    matchValue: Pod\n  - select: '$.syntheticRefs.namespace.metadata.labels.color'\n    matchValue: blue\npatch:\n  - op: add\n    path: /metadata/labels/flavor\n    value: '{{ .Target.syntheticRefs.namespace.metadata.labels.flavor }}'`,
    '  namespace: kubemod-system\n',
  );
  const zone = rule(
    'zone',
    `type: Patch\nmatch:\n  - select: '$.syntheticRefs.node.metadata.labels'\npatch:\n  - op: add\n    path: /metadata/labels/topology.kubernetes.io~1zone\n    value: '"{{ index .Target.syntheticRefs.node.metadata.labels "topology.kubernetes.io/zone" }}"'\n  - op: add\n    path: /syntheticRefs/scratch\n    value: must-not-leak`,
  );

  test('the namespace manifest is matched and templated but never returned', () => {
    const store = storeWith(flavor, { cluster: [loadFixture('namespace')] });
    const out = run(store, loadFixture('pod'));
    expect(labels(out.object).flavor).toBe('vanilla');
    expect(out.object).not.toHaveProperty('syntheticRefs');
    expect(JSON.stringify(out.patch)).not.toContain('syntheticRefs');
    // Without the namespace in the snapshot there is nothing to match.
    expect(run(storeWith(flavor), loadFixture('pod')).patch).toEqual([]);
  });

  test('pods annotated with ref.kubemod.io/node see their node', () => {
    const node = loadFixture('node');
    const nodeName = (node.metadata as JsonObject).name as string;
    const zoneLabel = ((node.metadata as JsonObject).labels as JsonObject)['topology.kubernetes.io/zone'];
    const store = storeWith(zone, { cluster: [node] });
    const pod = loadFixture('pod');
    expect(run(store, pod).patch).toEqual([]);
    (pod.metadata as JsonObject).annotations = { 'ref.kubemod.io/node': nodeName };
    const out = run(store, pod, { operation: 'UPDATE', oldObject: pod });
    expect(labels(out.object)['topology.kubernetes.io/zone']).toBe(zoneLabel);
    expect(out.object).not.toHaveProperty('syntheticRefs');
  });
});

describe('admit: last-applied-configuration', () => {
  test('the annotation gets the same operations, sorted compact JSON plus newline', () => {
    const store = storeWith(
      labelRule(
        'la',
        '',
        '',
        `
  - op: add
    path: /metadata/labels/color
    value: blue
  - op: replace
    path: /spec/revisionHistoryLimit
    value: '3'
  - op: add
    path: /spec/template/spec/containers/0/securityContext
    value: '{runAsNonRoot: true}'`,
      ),
    );
    const d = loadFixture('deployment');
    const out = run(store, d);
    const before = JSON.parse(annotations(d)[LAST_APPLIED_ANNOTATION] as string) as JsonObject;
    const text = annotations(out.object)[LAST_APPLIED_ANNOTATION] as string;
    expect(text.endsWith('}\n')).toBe(true);
    const after = JSON.parse(text) as JsonObject;
    expect(text).toBe(stableStringify(after) + '\n');
    expect(labels(after)).toEqual({ app: 'nginx', color: 'blue' });
    // revisionHistoryLimit was never in the applied configuration: the replace is skipped there.
    expect(after.spec).not.toHaveProperty('revisionHistoryLimit');
    const c0 = (
      (((after.spec as JsonObject).template as JsonObject).spec as JsonObject).containers as JsonObject[]
    )[0];
    expect(c0.securityContext).toEqual({ runAsNonRoot: true });
    expect((after.spec as JsonObject).replicas).toBe((before.spec as JsonObject).replicas);
    expect(Object.keys(after)).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
  });

  test('no annotation, no change to it; unchanged configuration is left byte for byte', () => {
    // replace of a field the user never applied: skipped in the annotation, which then stays as it was.
    const store = storeWith(
      labelRule('la', '', '', `  - op: replace\n    path: /spec/revisionHistoryLimit\n    value: '4'`),
    );
    const d = loadFixture('deployment');
    const out = run(store, d);
    expect((out.object?.spec as JsonObject).revisionHistoryLimit).toBe(4);
    expect(annotations(out.object)[LAST_APPLIED_ANNOTATION]).toBe(annotations(d)[LAST_APPLIED_ANNOTATION]);
    const pod = loadFixture('pod');
    const any = rule(
      'x',
      `type: Patch\nmatch:\n  - select: '$.kind'\npatch:\n  - op: add\n    path: /metadata/labels/x\n    value: b`,
    );
    const out2 = run(storeWith(any), pod);
    expect(labels(out2.object).x).toBe('b');
    expect(annotations(out2.object)).toEqual(annotations(pod));
  });
});

describe('admit: failures are isolated', () => {
  const good = labelRule('good', '', '', `  - op: add\n    path: /metadata/labels/good\n    value: 'ok'`);
  test.each([
    [
      'replace of a missing path',
      `  - op: add\n    path: /metadata/labels/partial\n    value: x\n  - op: replace\n    path: /spec/nope/deeper\n    value: x`,
    ],
    [
      'template runtime error',
      `  - op: add\n    path: /metadata/labels/partial\n    value: x\n  - op: add\n    path: /metadata/labels/t\n    value: '{{ fail "boom" }}'`,
    ],
    [
      'rendered value is not YAML',
      `  - op: add\n    path: /metadata/labels/partial\n    value: x\n  - op: add\n    path: /metadata/labels/t\n    value: '{{ "a: [1" }}'`,
    ],
  ])('%s: that rule is dropped as a whole, the others apply', (_name, ops) => {
    // 'bad' runs before 'good' in the tier, 'zbad' after it (where it writes into what 'good' copied), and a
    // third rule after the failure still applies.
    for (const name of ['bad', 'zbad']) {
      const after = labelRule(
        'zz-after',
        '',
        '',
        `  - op: add\n    path: /metadata/labels/after\n    value: 'ok'`,
      );
      const store = storeWith(good + '---\n' + labelRule(name, '', '', ops) + '---\n' + after);
      const out = run(store, loadFixture('deployment'));
      expect(out.allowed).toBe(true);
      expect(labels(out.object)).toEqual({ app: 'nginx', good: 'ok', after: 'ok' });
      expect(out.failures.map((f) => f.rule.name)).toEqual([name]);
      expect(out.failures[0].message.length).toBeGreaterThan(0);
      // All matched, only the good ones shaped the object.
      expect(out.matched.map((r) => r.name).sort()).toEqual([name, 'good', 'zz-after'].sort());
      expect(out.patched.map((r) => r.name)).toEqual(['good', 'zz-after']);
    }
  });

  test('a rule producing too many operations fails instead of stalling the request', () => {
    const d = loadFixture('deployment');
    (d.spec as JsonObject).many = Array.from({ length: 10_001 }, (_, i) => i);
    const store = storeWith(
      good +
        '---\n' +
        labelRule('huge', '', '', `  - op: remove\n    select: '$.spec.many[*]'\n    path: /spec/many/#0`),
    );
    const out = run(store, d);
    expect(out.failures.map((f) => f.rule.name)).toEqual(['huge']);
    expect(labels(out.object).good).toBe('ok');
    expect((out.object?.spec as JsonObject).many).toHaveLength(10_001);
  });
});

describe('admit: properties', () => {
  const key = fc.stringMatching(/^[a-z][a-z0-9./~-]{0,12}$/);
  const opArb = fc.record({
    op: fc.constantFrom('add', 'remove', 'replace'),
    key,
    value: fc.string({ maxLength: 8 }),
  });

  test('the returned patch always turns the original into the returned object', () => {
    fc.assert(
      fc.property(
        fc.dictionary(key, fc.string({ maxLength: 8 }), { maxKeys: 6 }),
        fc.array(opArb, { maxLength: 6 }),
        (start, ops) => {
          const store = new RuleStore();
          store.upsertRule({
            apiVersion: 'api.kubemod.io/v1beta1',
            kind: 'ModRule',
            metadata: { name: 'p', namespace: 'default' },
            spec: {
              type: 'Patch',
              match: [{ select: '$.kind' }],
              patch: ops.map((o) => ({
                op: o.op,
                path: `/metadata/labels/${escapeToken(o.key)}`,
                ...(o.op === 'remove' ? {} : { value: JSON.stringify(o.value) }),
              })),
            },
          });
          const d = loadFixture('deployment');
          (d.metadata as JsonObject).labels = { ...start };
          // run() asserts applyPatch(original, patch) == object and that the input is not mutated.
          const out = run(store, d);
          // A replace of a missing label fails the rule as a whole: then nothing changes at all.
          if (out.failures.length > 0) expect(out.patch).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('stableStringify', () => {
  // The plain definition: every object's keys sorted (UTF-16 order, as before), compact.
  const reference = (v: unknown): string => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${reference(o[k])}`)
      .join(',')}}`;
  };
  const key = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('0', '10', '2a', '__proto__', 'b', 'a'));

  test('writes what sorting every object would, sharing or copying whichever parts it must', () => {
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.constant(null)),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(key, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(stableStringify(v as JsonObject)).toBe(reference(v));
      }),
      { numRuns: 2000 },
    );
  });
});
