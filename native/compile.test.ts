import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { execFileSync } from 'node:child_process';
import { isJsonObject, JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { compileTemplate, compileSharedTemplate } from '../template';
import { compileNative, defaultDragnetMatch, DRAGNET_RESOURCES, dragnetMatchOf } from '.';
import { Guards } from './guard';
import { compileTemplateBody } from './template';
import { generateObject, Random } from './testing/generate';

const ROOT = join(__dirname, '..');

function rule(spec: JsonObject, meta: JsonObject = {}): CompiledRule {
  const compiled = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace: 'apps', ...meta },
    spec,
  }).rule;
  if (!compiled) throw new Error('invalid test rule');
  return compiled;
}

const CONFIGMAP = { select: '$.kind', matchValue: 'ConfigMap' };
const LABEL = { op: 'add', path: '/metadata/labels/team', value: 'platform' };

function exampleRules(): Array<{ file: string; rule: CompiledRule }> {
  const files = execFileSync('find', [join(ROOT, 'examples'), '-name', '*.yaml'], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .sort();
  const out: Array<{ file: string; rule: CompiledRule }> = [];
  for (const file of files)
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const o = doc.toJS() as JsonObject;
      if (!isJsonObject(o) || o.kind !== 'ModRule') continue;
      (o.metadata as JsonObject).namespace ??= 'default';
      out.push({ file: file.slice(ROOT.length + 1), rule: analyzeModRule(o).rule! });
    }
  return out;
}

describe('compileNative on examples/', () => {
  const results = exampleRules().map((e) => ({ ...e, native: compileNative(e.rule) }));

  // docs/native.md gives this fraction and these reasons; the differential e2e test proves the fitting ones.
  test('27 of 38 rules fit; the others say why', () => {
    expect(results).toHaveLength(38);
    const fit = results.filter((r) => r.native.fits).length;
    expect(fit).toBe(27);
    // The docs say what is counted here.
    const percent = Math.round((100 * fit) / results.length);
    const claim = `Of the ${results.length} ModRules in \`examples/\`, **${fit} compile (${percent}%)**`;
    expect(readFileSync(join(ROOT, 'docs', 'native.md'), 'utf8').replace(/\s+/g, ' ')).toContain(claim);
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain(`${fit} of the ${results.length} rules`);
    const misfits = results.flatMap((r) =>
      r.native.fits ? [] : [`${r.rule.name}: ${r.native.reasons.map((x) => x.field).join(', ')}`],
    );
    expect(misfits.sort()).toEqual(
      [
        'internal-registry: spec.patch[0]',
        'inject-node-annotations: spec.match[1], spec.patch[0]',
        'patch-section: spec.patch[1]',
        'select-placeholders: spec.patch[0]',
        'selected-item-image: spec.patch[0]',
        // examples/references: rules that read other objects
        'pod-team-from-deployment: spec.match[1], spec.patch[0]',
        'team-from-owner: spec.match[0], spec.patch[0]',
        'registry-mirror: spec.references, spec.match[1], spec.patch[0]',
        'default-priority: spec.references, spec.match[2], spec.patch[0]',
        // examples/images: a select over several container lists (a union)
        'docker-hub-mirror: spec.patch[0]',
        'pin-images: spec.match[1]',
      ].sort(),
    );
  });
});

describe('compileNative: the policies', () => {
  test('a Patch rule: a MutatingAdmissionPolicy in the dragnet scope, failing closed, reinvoked as the webhook is', () => {
    const n = compileNative(rule({ type: 'Patch', match: [CONFIGMAP], patch: [LABEL] }));
    if (!n.fits) throw new Error('does not fit');
    expect(n.policy).toMatchObject({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'modrule.apps.r', annotations: { 'native.modrule.io/rule': 'apps/r' } },
      spec: { failurePolicy: 'Fail', reinvocationPolicy: 'IfNeeded' },
    });
    const spec = n.policy.spec as JsonObject;
    const constraints = spec.matchConstraints as JsonObject;
    expect(constraints.namespaceSelector).toEqual(defaultDragnetMatch().namespaceSelector);
    expect(constraints.resourceRules).toEqual([
      {
        apiGroups: ['*'],
        apiVersions: ['*'],
        resources: DRAGNET_RESOURCES,
        scope: '*',
        operations: ['CREATE', 'UPDATE'],
      },
    ]);
    const conditions = (spec.matchConditions as JsonObject[]).map((c) => c.name);
    expect(conditions).toEqual(['scope', 'native-guards', 'match-0']);
    expect(n.guards.list.map((g) => g.what)).toContain(
      'no kubectl.kubernetes.io/last-applied-configuration annotation',
    );
    expect(n.binding).toMatchObject({
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name: 'modrule.apps.r' },
      spec: { policyName: 'modrule.apps.r' },
    });
  });

  test("a Reject rule on DELETE reads the old object, and its message is KubeMod's", () => {
    const n = compileNative(
      rule({
        type: 'Reject',
        admissionOperations: ['DELETE'],
        rejectMessage: 'keep {{ .Target.metadata.name }}',
        match: [CONFIGMAP],
      }),
    );
    if (!n.fits) throw new Error('does not fit');
    const spec = n.policy.spec as JsonObject;
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.variables).toEqual([
      { name: 'subject', expression: 'request.operation == "DELETE" ? oldObject : object' },
    ]);
    const [validation] = spec.validations as JsonObject[];
    expect(validation.expression).toContain('variables.subject[?"kind"]');
    expect(validation.messageExpression).toContain(
      'operation rejected by the following ModRule(s): apps/r: \\"',
    );
    expect(validation.reason).toBe('Forbidden');
    expect(n.guards.list.map((g) => g.what)).not.toContain(
      'no kubectl.kubernetes.io/last-applied-configuration annotation',
    );
  });

  test('conditions on namespaceObject are evaluated with the mutation (match conditions see it as null)', () => {
    const n = compileNative(
      rule(
        {
          type: 'Patch',
          targetNamespaceSelector: { matchLabels: { team: 'a' } },
          match: [
            CONFIGMAP,
            { select: '$.syntheticRefs.namespace.metadata.labels.tier', matchValue: 'gold' },
          ],
          patch: [LABEL],
        },
        { namespace: 'kubemod-system' },
      ),
    );
    if (!n.fits) throw new Error('does not fit');
    const spec = n.policy.spec as JsonObject;
    for (const c of spec.matchConditions as JsonObject[])
      expect(c.expression).not.toContain('namespaceObject');
    const patch = ((spec.mutations as JsonObject[])[0].jsonPatch as JsonObject).expression as string;
    expect(patch).toContain('namespaceObject.metadata.labels[?"team"]');
    expect(patch).toContain('[?"tier"]');
  });

  test('what does not fit says so at its field', () => {
    const reasons = (spec: JsonObject, meta?: JsonObject) => {
      const n = compileNative(rule(spec, meta));
      return n.fits ? [] : n.reasons;
    };
    expect(
      reasons({ type: 'Patch', admissionOperations: ['DELETE'], match: [CONFIGMAP], patch: [LABEL] }),
    ).toEqual([expect.objectContaining({ field: 'spec.admissionOperations' })]);
    expect(
      reasons({ type: 'Patch', match: [CONFIGMAP], patch: [LABEL] }, { name: 'Upper' })[0],
    ).toMatchObject({
      field: 'metadata.name',
      message: expect.stringContaining('DNS-1123'),
    });
    expect(
      reasons({ type: 'Patch', match: [{ select: '$..image', matchRegex: 'x' }], patch: [LABEL] })[0].message,
    ).toContain('recursive descent');
    expect(
      reasons({
        type: 'Patch',
        match: [CONFIGMAP],
        patch: [{ ...LABEL, value: 'a-{{ .Target.metadata.name }} b' }],
      })[0].message,
    ).toContain('builds YAML structure or spaces');
    expect(
      reasons({
        type: 'Patch',
        match: [{ select: '$.syntheticRefs.owner.metadata.labels.team' }],
        patch: [LABEL],
      })[0],
    ).toEqual({
      field: 'spec.match[0]',
      message:
        '$.syntheticRefs.owner.metadata.labels.team: syntheticRefs.owner has no counterpart in admission CEL ' +
        '(policies see no owner of the object)',
    });
    expect(
      reasons({
        type: 'Patch',
        references: [{ name: 'cfg', apiVersion: 'v1', kind: 'ConfigMap', objectName: 'cfg' }],
        match: [CONFIGMAP],
        patch: [LABEL],
      }),
    ).toEqual([expect.objectContaining({ field: 'spec.references' })]);
    expect(
      reasons({ type: 'Reject', match: [CONFIGMAP], rejectMessage: '{{ toJson .Target }}' })[0],
    ).toMatchObject({
      field: 'spec.rejectMessage',
      message: expect.stringContaining('toJson'),
    });
    expect(
      reasons({
        type: 'Reject',
        match: [{ select: '$.kind', matchValues: Array(30).fill('x'.repeat(4000)) }],
      })[0],
    ).toMatchObject({
      field: 'spec',
      message: expect.stringContaining("over the API server's limit of 100000"),
    });
  });

  test('a list iterated is guarded by its size (longer lists stay with the webhook)', () => {
    const n = compileNative(
      rule({ type: 'Reject', match: [{ select: '$.spec.containers[*].image', matchRegex: ':latest$' }] }),
    );
    if (!n.fits) throw new Error('does not fit');
    const containers = (k: number) => ({
      spec: { containers: Array.from({ length: k }, () => ({ image: 'a' })) },
    });
    expect(n.guards.holds(containers(5000))).toBe(true);
    expect(n.guards.holds(containers(5001))).toBe(false);
  });
});

test("the dragnet scope export uses is bundle's (config/webhook)", () => {
  const config = parse(
    readFileSync(join(ROOT, 'config', 'webhook', 'mutating_webhook_configuration.yaml'), 'utf8'),
  ) as JsonObject;
  expect(dragnetMatchOf(config)).toEqual(defaultDragnetMatch());
});

describe("templates: the TypeScript rendering the guards use is the engine's", () => {
  const sources = [
    'v-{{ .Target.metadata.name }}',
    '{{ .Target.spec.a }}',
    '{{ .Target.spec.tags }}',
    '{{ .Namespace }}/{{ .Target.spec.b.c }}',
    '{{ index .Target.metadata.labels "app" }}',
    '{{ .Target.spec.a | replace "a" "b" }}',
  ];
  const r = new Random(5);
  const objects = Array.from({ length: 300 }, (_, i) => {
    const o = generateObject(r, `o-${i}`);
    (o.metadata as JsonObject).namespace = 'apps';
    return o;
  });

  test.each(sources)('%s', (source) => {
    const guards = new Guards();
    const rendered = compileTemplateBody(compileSharedTemplate(source).tree.root, {
      ctx: { guards, reads: [] },
    });
    const engine = compileTemplate(source);
    let compared = 0;
    for (const o of objects) {
      if (!guards.holds(o)) continue;
      compared++;
      expect(rendered.render(o)).toBe(engine.render({ Target: o, Namespace: 'apps' }));
    }
    expect(compared).toBeGreaterThan(50);
  });
});

describe('compileNative: spec.enforcementAction', () => {
  const reject = (action?: string) =>
    rule({
      type: 'Reject',
      ...(action ? { enforcementAction: action } : {}),
      rejectMessage: 'no ConfigMaps',
      match: [CONFIGMAP],
    });

  test.each([
    [undefined, 'Deny'],
    ['Enforce', 'Deny'],
    ['Warn', 'Warn'],
    ['DryRun', 'Audit'],
  ])('a Reject rule with %s: the binding validationActions [%s] (export --native)', (action, expected) => {
    const fit = compileNative(reject(action), { unenforcedActions: true });
    if (!fit.fits) throw new Error(JSON.stringify(fit.reasons));
    expect((fit.binding.spec as JsonObject).validationActions).toEqual([expected]);
    expect(fit.policy.kind).toBe('ValidatingAdmissionPolicy');
  });

  test('the operator leaves Warn/DryRun Reject rules to the webhook, saying why', () => {
    const fit = compileNative(reject('Warn'));
    expect(fit.fits).toBe(false);
    if (fit.fits) return;
    expect(fit.reasons).toEqual([
      {
        field: 'spec.enforcementAction',
        message: expect.stringMatching(
          /^Warn: served by the webhook, which records what the rule would reject/,
        ),
      },
    ]);
  });

  test.each(['Warn', 'DryRun'])('a Patch rule in %s stays on the webhook, with the reason', (action) => {
    const fit = compileNative(
      rule({ type: 'Patch', enforcementAction: action, match: [CONFIGMAP], patch: [LABEL] }),
      { unenforcedActions: true },
    );
    expect(fit.fits).toBe(false);
    if (fit.fits) return;
    expect(fit.reasons).toEqual([
      {
        field: 'spec.enforcementAction',
        message: `${action}: a MutatingAdmissionPolicy cannot warn or dry-run a patch; the webhook serves the rule and records what it would patch`,
      },
    ]);
  });
});
