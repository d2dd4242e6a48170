import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { main } from './main';
import { CommandIO } from './io';
import type { ExportResult } from './export';

async function modrule(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CommandIO = {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    readStdin: async () => '',
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

const EXAMPLES = join(__dirname, '..', 'examples');
const docs = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as JsonObject);

function rulesFile(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'modrule-export-'));
  const file = join(dir, 'rules.yaml');
  writeFileSync(file, yaml);
  return file;
}

const rule = (name: string, spec: string, namespace = '') => `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata:
  name: ${name}
${namespace ? `  namespace: ${namespace}\n` : ''}spec:
${spec}`;

const LABEL = `  type: Patch
  match:
    - select: '$.kind'
      matchValue: ConfigMap
  patch:
    - op: add
      path: /metadata/labels/team
      value: platform
`;

describe('modrule export --native', () => {
  test('writes a policy and a binding per fitting rule, and why the others do not fit', async () => {
    const out = await modrule([
      'export',
      '--native',
      ...['local/rules', 'helm/rules', 'namespace-selector/modrules.yaml', 'kubemod/inject-node-annotations']
        .concat([
          'kubemod/pvc-owner-reference',
          'kubemod/match-section',
          'kubemod/reject-root-access-workloads',
        ])
        .flatMap((p) => ['--rules', join(EXAMPLES, p)]),
    ]);
    expect(out.code).toBe(2);
    const objects = docs(out.stdout);
    const kinds = objects.map((o) => o.kind);
    expect(kinds.filter((k) => k === 'MutatingAdmissionPolicy')).toHaveLength(7);
    expect(kinds.filter((k) => k === 'ValidatingAdmissionPolicy')).toHaveLength(5);
    // Each policy is followed by its binding.
    for (let i = 0; i < objects.length; i += 2) {
      expect(objects[i + 1].kind).toBe(`${String(objects[i].kind)}Binding`);
      expect((objects[i + 1].spec as JsonObject).policyName).toBe((objects[i].metadata as JsonObject).name);
    }
    for (const o of objects) expect(o.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(out.stderr).toMatch(
      /examples\/kubemod\/inject-node-annotations\/modrule\.yaml: ModRule kubemod-system\/inject-node-annotations does not fit: spec\.match\[1\]: .*syntheticRefs\.node/,
    );
    expect(out.stderr).toMatch(
      /helm.*internal-registry does not fit: spec\.patch\[0\]: reads .*image, which/,
    );
    expect(out.stderr).not.toContain('pvc-owner-reference'); // removes list element 0 where there is one at most
    expect(out.stderr).toContain('12 of 14 ModRules compile to native policies');
  });

  // The README gives the fraction of examples/ that fits: what this command prints for the whole folder.
  test("the README's count is what export --native --rules examples/ prints", async () => {
    const r = await modrule(['export', '--native', '--rules', EXAMPLES]);
    const [, fit, all] = /^(\d+) of (\d+) ModRules compile to native policies$/m.exec(r.stderr) ?? [];
    expect(Number(all)).toBeGreaterThan(0);
    const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
    expect(readme).toMatch(new RegExp(`\\b${fit} of the ${all} rules in \`examples/\` fit\\b`));
    // Every rule there has a name of its own: none is left out as taking another's policy name.
    expect(r.stderr).not.toContain('is already taken');
  });

  test('exits 0 when every rule fits, and the JSON output carries the objects', async () => {
    const file = rulesFile(rule('team', LABEL));
    const yaml = await modrule(['export', '--native', '--rules', file]);
    expect(yaml.code).toBe(0);
    expect(docs(yaml.stdout).map((o) => (o.metadata as JsonObject).name)).toEqual([
      'modrule.default.team',
      'modrule.default.team',
    ]);
    const json = await modrule(['export', '--native', '--rules', file, '--output', 'json']);
    const results = JSON.parse(json.stdout) as ExportResult[];
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ namespace: 'default', name: 'team', fits: true, reasons: [] });
    expect(results[0].objects.map((o) => o.kind)).toEqual([
      'MutatingAdmissionPolicy',
      'MutatingAdmissionPolicyBinding',
    ]);
  });

  test('a rule whose name is not a valid policy name does not fit, and says so', async () => {
    const file = rulesFile(rule('Team_Rule', LABEL));
    const out = await modrule(['export', '--native', '--rules', file, '--output', 'json']);
    expect(out.code).toBe(2);
    const [result] = JSON.parse(out.stdout) as ExportResult[];
    expect(result.fits).toBe(false);
    expect(result.reasons[0]).toMatchObject({ field: 'metadata.name' });
    expect(result.reasons[0].message).toContain('modrule.default.Team_Rule');
  });

  test('two rules with the same policy name: the second is refused with the file of the first', async () => {
    const first = rulesFile(rule('team', LABEL, 'apps'));
    const second = rulesFile(rule('team', LABEL, 'apps'));
    const out = await modrule(['export', '--native', '--rules', first, '--rules', second]);
    expect(out.code).toBe(2);
    expect(docs(out.stdout)).toHaveLength(2);
    expect(out.stderr).toContain(
      `${second}: ModRule apps/team does not fit: metadata.name: policy name modrule.apps.team is already taken by the ModRule in ${first}`,
    );
  });

  test('nested iteration does not fit: its CEL cost grows with the product of the list sizes', async () => {
    const file = rulesFile(
      rule(
        'ports',
        `  type: Reject
  match:
    - select: '$.spec.template.spec.containers[*].ports[*].containerPort'
      matchValue: '22'
`,
      ),
    );
    const out = await modrule(['export', '--native', '--rules', file]);
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain('spec.match[0]');
    expect(out.stderr).toContain('per-expression limit');
  });

  test('an invalid rule is bad input: exit 1 with its file, name and field', async () => {
    const file = rulesFile(
      rule('broken', `  type: Patch\n  match:\n    - select: '$.kind'\n      matchRegex: '('\n`),
    );
    const out = await modrule(['export', '--native', '--rules', file]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`${file}: ModRule default/broken: spec.match[0].matchRegex`);
  });

  test('needs --native and --rules', async () => {
    expect((await modrule(['export', '--rules', EXAMPLES])).stderr).toContain(
      '--native, argocd or flux is required',
    );
    expect((await modrule(['export', '--native'])).code).toBe(1);
  });
});

describe('modrule export --native: enforcementAction', () => {
  it('a Warn/DryRun Reject rule becomes a binding with validationActions Warn/Audit; a DryRun Patch rule stays on the webhook', async () => {
    const reject = (name: string, action: string) =>
      rule(
        name,
        `  type: Reject
  enforcementAction: ${action}
  match:
    - select: '$.kind'
      matchValue: ConfigMap
`,
      );
    const file = rulesFile(
      [
        reject('warned', 'Warn'),
        reject('audited', 'DryRun'),
        rule('dry-label', `${LABEL}  enforcementAction: DryRun\n`),
      ].join('---'),
    );
    const out = await modrule(['export', '--native', '--rules', file]);
    expect(out.code).toBe(2);
    const bindings = docs(out.stdout).filter((d) => String(d.kind).endsWith('Binding'));
    expect(bindings.map((b) => (b.spec as JsonObject).validationActions)).toEqual([['Warn'], ['Audit']]);
    expect(out.stderr).toContain(
      'ModRule default/dry-label does not fit: spec.enforcementAction: DryRun: a MutatingAdmissionPolicy cannot warn or dry-run a patch; the webhook serves the rule and records what it would patch',
    );
  });
});
