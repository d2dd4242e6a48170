import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { AdmissionRequest } from '../webhook/admission';
import { JsonObject } from '../util/json';
import { handleValidateModRule } from '../webhook/modrule';
import { CommandResult, runCommand } from './testing';
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
  test('the shipped examples are valid and draw no warnings', async () => {
    const r = await validate([join(ROOT, 'examples'), join(ROOT, 'config', 'testdata', 'valid')]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^\d+ ModRules in \d+ files: 0 problems, 0 warnings\n$/);
    expect(r.code).toBe(0);
  });

  // Offline and in the cluster the same rules must be refused: compare with the webhook's own answer.
  const invalidDir = join(ROOT, 'config', 'testdata', 'invalid');
  const invalid = readdirSync(invalidDir).filter((f) => f.endsWith('.yaml'));
  test.each(invalid)(
    'config/testdata/invalid/%s: refused exactly when the webhook refuses it',
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
      expect(r.code).toBe(webhook.allowed ? 0 : 1);
      // Every problem the webhook names, offline names too, with its field.
      for (const e of errors) expect(webhook.status?.message).toContain(`${e.field}: ${e.message}`);
      expect(errors.length > 0).toBe(!webhook.allowed);
    },
  );

  test('every problem with file, line, document, rule and field; other kinds skipped; exit 1', async () => {
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
    expect(r.code).toBe(1);
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
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`${file}:2: document 1: ModRule t: kind: must be ModRule, got "Modrule"\n`);
  });

  test('broken YAML and missing files are problems; the other documents are still checked', async () => {
    const file = write('broken.yaml', `${rule('x', '  type: Nope\n  match: []\n')}---\nkey: [1\n`);
    const r = await validate([file, join(tmp, 'missing.yaml'), '--output', 'json']);
    expect(r.code).toBe(1);
    const findings = JSON.parse(r.stdout) as Finding[];
    expect(findings.map((f) => [f.document, f.line, f.field, f.message.split(':')[0]])).toEqual([
      [1, 6, 'spec.type', 'must be Patch or Reject, got "Nope"'],
      [1, 7, 'spec.match', 'must have at least one item'],
      [2, 9, '', 'invalid YAML'],
      [0, 0, '', `cannot read ${join(tmp, 'missing.yaml')}`],
    ]);
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
      expect(strict.code).toBe(1);
      expect(strict.stdout).toContain('warning: ');
    });
  });

  test.each([
    [[], /give at least one PATH/],
    [['x', '--output', 'xml'], /--output must be text or json/],
    [['--nope'], /Unknown option '--nope'/],
  ])('usage %j: exit 2', async (args, message) => {
    const r = await validate(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
