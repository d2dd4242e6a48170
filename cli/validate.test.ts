import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { AdmissionRequest } from '../webhook/admission';
import { JsonObject } from '../util/json';
import { handleValidateModRule } from '../webhook/modrule';
import { CommandResult, runCommand } from './testing';
import { run as applyRun } from './apply';
import { EXIT } from './exit';
import { main } from './main';
import { Finding, run } from './validate';

const validate = (args: string[]): Promise<CommandResult> => runCommand(run, args);

const ROOT = join(__dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'modrule-validate-'));
const write = (name: string, text: string): string => {
  const path = join(tmp, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
};

const rule = (name: string, spec: string): string =>
  `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: ${name}\nspec:\n${spec}`;

describe('modrule validate', () => {
  // Each example on its own, and all of examples/ at once (every rule there has a name of its own).
  const exampleSets = [
    join(ROOT, 'examples'),
    ...['helm', 'local', 'namespace-selector', 'testing'].map((d) => join(ROOT, 'examples', d)),
    ...readdirSync(join(ROOT, 'examples', 'kubemod')).map((d) => join(ROOT, 'examples', 'kubemod', d)),
    ...readdirSync(join(ROOT, 'bundle', 'testdata', 'valid')).map((f) =>
      join(ROOT, 'bundle', 'testdata', 'valid', f),
    ),
  ];
  // The README's three alternative selects in one rule (testdata): the added {} is removed again at the next
  // change, then filled, and so on. It is valid, and the idempotence warning says so.
  const flapping = 'readme-jsonpath-securitycontext.yaml';
  test.each(exampleSets.filter((p) => !p.endsWith(flapping)))(
    'the shipped example %s is valid and draws no warnings',
    async (path) => {
      const r = await validate([path]);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^\d+ ModRules? in \d+ files?: 0 problems, 0 warnings\n$/);
      expect(r.code).toBe(0);
    },
  );

  test('the README rule with all three alternative selects is valid but not idempotent', async () => {
    const r = await validate([join(ROOT, 'bundle', 'testdata', 'valid', flapping)]);
    expect(r.stdout).toMatch(
      /^warning: .*:13: document 1: ModRule kubemod-system\/kubemod-patch-deployments-containers-securitycontext: spec\.patch: not idempotent: applied to its own result it changes \/spec\/template\/spec\/containers\/0\/securityContext again \(sample Deployment web\)/,
    );
    expect(r.stderr).toMatch(/: 0 problems, 1 warning\n$/);
    expect(r.code).toBe(0);
  });

  test('a folder of rules in conflict: one finding per conflict with both rules, their files and the path; exit 2', async () => {
    const r = await validate([join(ROOT, 'fixtures', 'conflicts'), '--output', 'json']);
    expect(r.code).toBe(EXIT.finding);
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings.map((f) => [f.severity, f.rule, f.field, f.message.split(':')[0]])).toEqual([
      ['conflict', 'shop/team-db', 'spec.patch[0]', 'value'],
      ['conflict', 'shop/env-list', 'spec.patch[0]', 'shape'],
      ['conflict', 'shop/unguarded-sidecar', 'spec.patch', 'idempotence'],
      ['conflict', 'shop/pin-latest', 'spec.patch[0]', 'reject-after-patch'],
    ]);
    expect(findings[0]).toMatchObject({ file: expect.stringMatching(/value\.yaml$/), line: 28 });
    expect(findings[0].message).toMatch(/shop\/team-web.*\/metadata\/labels\/team.*\(.*value\.yaml:13\)$/);
    const text = await validate([join(ROOT, 'fixtures', 'conflicts')]);
    expect(text.stdout.split('\n')[0]).toMatch(
      /^conflict: .*value\.yaml:28: document 2: ModRule shop\/team-db: spec\.patch\[0\]: value: /,
    );
    expect(text.stderr).toBe('7 ModRules in 4 files: 0 problems, 4 conflicts, 0 warnings\n');
    expect((await validate([join(ROOT, 'fixtures', 'conflicts-none')])).code).toBe(EXIT.ok);
  });

  // The conflict check builds its witness from the rule's criteria, so it finds the rule without objects; with them,
  // the warning on those objects is not said again beside the conflict.
  test('a rule changing its own result again: one report, the idempotence conflict, with or without objects', async () => {
    const dir = join(tmp, 'idempotence');
    const rules = write(
      'idempotence/rules.yaml',
      rule(
        'sidecar',
        '  type: Patch\n  match:\n    - select: $.kind\n      matchValue: Pod\n    - select: $.metadata.labels.inject\n      matchValue: "yes"\n' +
          '  patch:\n    - op: add\n      path: /spec/containers/-\n      value: "name: agent"\n',
      ),
    );
    write(
      'idempotence/pod.yaml',
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {inject: "yes"}\nspec:\n  containers: [{name: a, image: nginx}]\n',
    );
    for (const path of [rules, dir]) {
      const r = await validate([path]);
      expect(r.code).toBe(EXIT.finding);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^conflict: .*rules\.yaml:\d+: document 1: ModRule sidecar: spec\.patch: idempotence: .*changes \/spec\/containers\/\d+ again/,
      );
    }
  });

  // Offline and in the cluster the same rules must be refused: compare with the webhook's own answer.
  const invalidDir = join(ROOT, 'bundle', 'testdata', 'invalid');
  const invalid = readdirSync(invalidDir).filter((f) => f.endsWith('.yaml'));
  test.each(invalid)(
    'bundle/testdata/invalid/%s: refused exactly when the webhook refuses it',
    async (file) => {
      const path = join(invalidDir, file);
      const object = parse(readFileSync(path, 'utf8')) as JsonObject;
      const request = {
        uid: 'u',
        kind: { group: 'api.kubemod.io', version: 'v1beta1', kind: 'ModRule' },
        resource: { group: 'api.kubemod.io', version: 'v1beta1', resource: 'modrules' },
        operation: 'CREATE',
        namespace: 'default',
        object,
      } as unknown as AdmissionRequest;
      const webhook = handleValidateModRule(request).response;
      const r = await validate([path, '--output', 'json']);
      const errors = (JSON.parse(r.stdout) as Finding[]).filter((f) => f.severity === 'error');
      expect(r.code).toBe(webhook.allowed ? EXIT.ok : EXIT.finding);
      // Every problem the webhook names, offline names too, with its field.
      for (const e of errors) expect(webhook.status?.message).toContain(`${e.field}: ${e.message}`);
      expect(errors.length > 0).toBe(!webhook.allowed);
    },
  );

  // kubectl apply shows these one kind at a time (test/e2e/explain.e2e.ts); validate all at once.
  test('fixtures/invalid-modrule.yaml: an unknown field, a wrong type and a broken select, all at once', async () => {
    const r = await validate([join(ROOT, 'fixtures', 'invalid-modrule.yaml'), '--output', 'json']);
    expect(r.code).toBe(EXIT.finding);
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings.map((f) => [f.severity, f.field])).toEqual([
      ['error', 'spec.match[0].negatee'],
      ['error', 'spec.match[0].select'],
      ['error', 'spec.patch[0].value'],
    ]);
    expect(findings[0].message).toContain('did you mean "negate"');
    expect(findings[2].message).toContain('got true: YAML 1.1');
  });

  test('every problem with file, line, document, rule and field; other kinds skipped; exit 2', async () => {
    const file = write(
      'rules/multi.yaml',
      [
        rule(
          'good',
          "  type: Patch\n  match:\n    - select: '$.kind'\n  patch:\n    - op: add\n      path: /a\n      value: b\n",
        ),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-a-rule\n',
        '',
        rule('bad', "  type: Patch\n  match:\n    - select: '$.kind =='\n      matchFor: Some\n"),
      ].join('---\n'),
    );
    const r = await validate([join(tmp, 'rules')]);
    expect(r.code).toBe(EXIT.finding);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(
        new RegExp(`^${file}:27: document 4: ModRule bad: spec\\.match\\[0\\]\\.select: column \\d+: `),
      ),
      `${file}:28: document 4: ModRule bad: spec.match[0].matchFor: must be Any or All, got "Some"`,
      `${file}:24: document 4: ModRule bad: spec.patch: required for ModRules of type Patch: at least one operation`,
    ]);
    expect(r.stderr).toBe('2 ModRules in 1 file: 3 problems, 0 warnings\n');
  });

  test('a kind typo in the KubeMod group is reported, not skipped', async () => {
    const file = write(
      'typo.yaml',
      rule('t', "  type: Reject\n  match:\n    - select: '$.kind'\n").replace(
        'kind: ModRule',
        'kind: Modrule',
      ),
    );
    const r = await validate([file]);
    expect(r.code).toBe(EXIT.finding);
    expect(r.stdout).toBe(`${file}:2: document 1: ModRule t: kind: must be ModRule, got "Modrule"\n`);
  });

  test('broken YAML is a problem (exit 2) at the line the caret shows; the other documents are still checked', async () => {
    const file = write(
      'broken.yaml',
      `${rule('x', '  type: Nope\n  match: []\n')}---\nkey: {a: 1\nother: 2\n`,
    );
    const r = await validate([file, '--output', 'json']);
    expect(r.code).toBe(EXIT.finding);
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings.map((f) => [f.document, f.line, f.field, f.message.split(':')[0]])).toEqual([
      [1, 6, 'spec.type', 'must be Patch or Reject, got "Nope"'],
      [1, 7, 'spec.match', 'must have at least one item'],
      [2, 10, '', 'invalid YAML'],
    ]);
    expect(findings[2]).toMatchObject({ line: 10, column: 1 });
    const text = await validate([file]);
    expect(text.stdout).toContain(
      `${file}:10:1: document 2: invalid YAML: Flow map in block collection must be sufficiently indented and end with a }\n` +
        '  9 | key: {a: 1\n' +
        ' 10 | other: 2\n' +
        '    | ^\n',
    );
  });

  test('a PATH that cannot be read is exit 1 (bad input), after the findings of the others', async () => {
    const file = write('broken2.yaml', rule('x', '  type: Nope\n  match: []\n'));
    const r = await validate([file, join(tmp, 'missing.yaml'), '--output', 'json']);
    expect(r.code).toBe(EXIT.error);
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings.map((f) => [f.document, f.line, f.message.split(':')[0]])).toEqual([
      [1, 6, 'must be Patch or Reject, got "Nope"'],
      [1, 7, 'must have at least one item'],
      [0, 0, `cannot read ${join(tmp, 'missing.yaml')}`],
    ]);
  });

  test('"-" reads standard input, named <stdin>', async () => {
    const r = await runCommand(run, ['-'], { stdin: rule('s', '  type: Nope\n  match: []\n') });
    expect(r.code).toBe(EXIT.finding);
    expect(r.stdout).toContain('<stdin>:6: document 1: ModRule s: spec.type: must be Patch or Reject');
  });

  describe('warnings (exit 0 unless --strict)', () => {
    const warned = async (text: string): Promise<string[]> => {
      const r = await validate([write(`w${Math.random()}.yaml`, text), '--output', 'json']);
      expect(r.code).toBe(0);
      return (JSON.parse(r.stdout) as Finding[]).map(
        (f) => `${f.severity} ${f.rule}: ${f.field}: ${f.message}`,
      );
    };

    test('a boolean select never compares its matchValue; a numeric one cannot equal a word', async () => {
      expect(
        await warned(
          rule(
            'w',
            "  type: Reject\n  match:\n    - select: '$.spec.replicas > 3'\n      matchValue: 'true'\n    - select: 'length($.spec.template.spec.containers)'\n      matchValues: [one, two]\n    - select: 'length($.spec.template.spec.containers)'\n      matchValue: '2'\n",
          ),
        ),
      ).toEqual([
        'warning w: spec.match[0].matchValue: never compared: the select yields true or false, and the item matches when it is true',
        'warning w: spec.match[1].matchValues: can never match: the select yields a number and "one", "two" is not one',
      ]);
    });

    test('#N placeholders captured but never used, and #N without a select', async () => {
      expect(
        await warned(
          rule(
            'p',
            "  type: Patch\n  match:\n    - select: '$.kind'\n  patch:\n    - op: add\n      select: '$.spec.template.spec.containers[*].ports[*]'\n      path: /spec/template/spec/containers/#0/ports/0/name\n      value: web\n    - op: add\n      select: '$.spec.template.spec.containers[*]'\n      path: /metadata/annotations/x\n      value: '{{ .SelectedItem.name }}-#0'\n    - op: add\n      path: /metadata/labels/n#0\n      value: x\n    - op: add\n      select: '$.spec.template.spec.containers[*]'\n      path: /metadata/labels/fine\n      value: '{{ .#0 }}'\n",
          ),
        ),
      ).toEqual([
        expect.stringMatching(/^warning p: spec\.patch\[0\]\.path: placeholder #1 is never used/),
        expect.stringMatching(/^warning p: spec\.patch\[1\]\.path: placeholder #0 is never used/),
        'warning p: spec.patch[2].path: #0 is literal text here: placeholders are filled only when the operation has a select',
      ]);
    });

    test('a Patch rule repeating the patch of an earlier tier is shadowed', async () => {
      const patch = '  patch:\n    - op: add\n      path: /metadata/labels/team\n      value: platform\n';
      const text = [
        rule('first', `  type: Patch\n  match:\n    - select: '$.kind'\n${patch}`),
        rule(
          'again',
          `  type: Patch\n  executionTier: 2\n  match:\n    - select: '$.metadata.name'\n${patch}`,
        ),
        rule('same-tier', `  type: Patch\n  match:\n    - select: '$.metadata.name'\n${patch}`),
      ].join('---\n');
      expect(await warned(text)).toEqual([
        'warning again: spec.patch: identical to the patch of ModRule /first (tier 0), which runs first: where both match, this rule changes nothing',
      ]);
      const strict = await validate([write('strict.yaml', text), '--strict']);
      expect(strict.code).toBe(EXIT.finding);
      expect(strict.stdout).toContain('warning: ');
    });

    const limitsRule = (select: string, rest: string): string =>
      rule(
        'limits',
        `  type: Reject\n  rejectMessage: memory limits\n  match:\n    - select: '$.kind'\n      matchValue: Pod\n    - select: ${JSON.stringify(select)}\n${rest}`,
      );
    const allNegated = "      matchFor: All\n      matchRegex: 'memory'\n      negate: true\n";

    test('matchFor: All with negate over a select that drops missing values, with the filter form', async () => {
      const warnings = await warned(limitsRule('$.spec.containers[*].resources.limits', allNegated));
      expect(warnings).toEqual([
        "warning limits: spec.match[1].select: with matchFor: All and negate, an element of $.spec.containers[*] without .resources.limits is never seen: the select drops missing values, so such an element cannot make this item match (only all of them missing does); select the failing elements instead and drop matchFor, negate, matchRegex: select: '$.spec.containers[? !(@.resources.limits =~ `memory`)]'",
      ]);
      // Which selects are warned about, and the suggestions: modrule/lint.test.ts.
    });

    test('the suggested filter form rejects what the warned rule lets through', async () => {
      const pod = (limits: boolean[]): string =>
        stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p', namespace: 'default' },
          spec: {
            containers: limits.map((l, i) => ({
              name: `c${i}`,
              image: 'nginx',
              ...(l ? { resources: { limits: { memory: '1Gi' } } } : {}),
            })),
          },
        });
      const warnedRule = write(
        'limits-warned.yaml',
        limitsRule('$.spec.containers[*].resources.limits', allNegated),
      );
      const [warning] = await warned(readFileSync(warnedRule, 'utf8'));
      const suggested = /select: '(.*)'$/.exec(warning)?.[1].replace(/''/g, "'") ?? '';
      const fixedRule = write('limits-fixed.yaml', limitsRule(suggested, ''));
      const verdict = async (rules: string, limits: boolean[]): Promise<number> =>
        (await runCommand(applyRun, ['--rules', rules], { stdin: pod(limits) })).code;
      // One container without limits: the warned rule admits the Pod, the suggested one rejects it.
      expect(await verdict(warnedRule, [true, false])).toBe(EXIT.ok);
      expect(await verdict(fixedRule, [true, false])).toBe(EXIT.finding);
      // Otherwise both agree.
      for (const limits of [
        [true, true],
        [false, false],
      ])
        expect(await verdict(fixedRule, limits)).toBe(await verdict(warnedRule, limits));
      expect(await verdict(fixedRule, [true, true])).toBe(EXIT.ok);
    });

    test('the same ModRule name in two files (as apply warns), not across namespaces', async () => {
      const body = "  type: Reject\n  match:\n    - select: '$.kind'\n";
      const dir = join(tmp, 'dup');
      const a = write('dup/a.yaml', rule('same', body));
      const b = write('dup/b.yaml', `${rule('other', body)}---\n${rule('same', body)}`);
      write('dup/c.yaml', rule('same', body).replace('  name: same', '  name: same\n  namespace: team-b'));
      const r = await validate([dir, '--output', 'json']);
      expect(r.code).toBe(EXIT.ok);
      expect(JSON.parse(r.stdout)).toEqual([
        {
          severity: 'warning',
          file: b,
          document: 2,
          line: 13,
          rule: 'same',
          field: 'metadata.name',
          message: `the same ModRule as at ${a}:4 (document 1): applied together, this one replaces that one`,
        },
      ]);
      expect((await validate([dir, '--strict'])).code).toBe(EXIT.finding);
    });

    test('a kind neither built in nor declared by a CRD under the paths, with the kind it is likely meant to be', async () => {
      const kinds = (kind: string) =>
        `  type: Patch\n  match:\n    - select: $.metadata.name\n      matchValue: web\n    - select: $.kind\n` +
        `      matchValue: ${kind}\n  patch:\n    - op: add\n      path: /metadata/labels/x\n      value: '"y"'\n`;
      const typo = write('kinds/typo.yaml', rule('typo', kinds('Deploymnet')));
      write('kinds/gadget.yaml', rule('gadget', kinds('Gadget')));
      const r = await validate([join(tmp, 'kinds'), '--output', 'json']);
      expect(r.code).toBe(EXIT.ok);
      const findings = JSON.parse(r.stdout) as Finding[];
      expect(findings.map((f) => [f.rule, f.field, f.line])).toEqual([
        ['gadget', 'spec.match[1].matchValue', 11],
        ['typo', 'spec.match[1].matchValue', 11],
      ]);
      expect(findings[1]).toMatchObject({
        severity: 'warning',
        file: typo,
        message: expect.stringMatching(
          /^kind Deploymnet is not built into Kubernetes 1\.37 nor declared by a CustomResourceDefinition under the given paths \(did you mean Deployment\?\): in a cluster that does not serve it/,
        ),
      });
      // The CRD given as another path (or in the same folder) declares Gadget: only the typo is left.
      const crds = write(
        'crds/gadget.yaml',
        'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\n' +
          'spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    kind: Gadget\n    plural: gadgets\n',
      );
      const withCrd = await validate([join(tmp, 'kinds'), crds]);
      expect(withCrd.stdout).toMatch(
        /^warning: .*typo\.yaml:11: document 1: ModRule typo: spec\.match\[1\]\.matchValue: kind Deploymnet/,
      );
      expect(withCrd.stdout).not.toContain('Gadget');
      expect(withCrd.stderr).toBe('2 ModRules in 3 files: 0 problems, 1 warning\n');
      expect((await validate([join(tmp, 'kinds'), crds, '--strict'])).code).toBe(EXIT.finding);
    });
  });

  test.each([
    [[], /give at least one PATH/],
    [['x', '--output', 'xml'], /--output must be text or json/],
    [['--nope'], /unknown option '--nope'/],
  ])('usage %j: exit 1', async (args, message) => {
    // Bad usage is a UsageError, printed by the dispatcher as for every subcommand.
    const r = await runCommand((a, io) => main(['validate', ...a], io), args);
    expect(r.code).toBe(EXIT.error);
    expect(r.stderr).toMatch(message);
  });
});
