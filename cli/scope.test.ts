import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { JsonObject } from '../util/json';
import { EXIT } from './exit';
import { main } from './main';
import { CommandResult, runCommand } from './testing';

// Through main(), as the command line runs it: bad usage and input become exit 1 with the message on stderr.
const scope = (args: string[]): Promise<CommandResult> =>
  runCommand((rest, io) => main(['scope', ...rest], io), args);
const ROOT = join(__dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'modrule-scope-'));
const write = (name: string, text: string): string => {
  const path = join(tmp, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
};

const deploymentsRule = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: label-deployments, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/x, value: '"y"'}]
`;

describe('modrule scope', () => {
  test('a Pod rule reaching controllers: a row per variant, and their resources sent', async () => {
    const r = await scope([join(ROOT, 'examples', 'pod-controllers', 'rules.yaml')]);
    expect(r.code).toBe(0);
    const rows = r.stdout.split('\nThe API server sends')[0];
    expect(rows).toMatch(/shop\/log-agent\s+CREATE,UPDATE\s+core\/pods\s+shop/);
    expect(rows).toMatch(/shop\/log-agent \(Deployment\)\s+CREATE,UPDATE\s+apps\/deployments\s+shop/);
    expect(rows).toMatch(/shop\/log-agent \(Job\)\s+CREATE\s+batch\/jobs\s+shop/);
    expect(rows).toMatch(
      /shop\/require-limits \(ReplicationController\)\s+CREATE,UPDATE\s+core\/replicationcontrollers/,
    );
    expect(r.stdout).toContain('- cronjobs');
  });

  test('the local examples: each rule with its share, then the registration the API server gets', async () => {
    const r = await scope([join(ROOT, 'examples', 'local', 'rules')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const [rows, rest] = r.stdout.split(
      '\nThe API server sends dragnet.kubemod.io what this registration matches:\n',
    );
    expect(rows).toMatch(
      /kubemod-system\/label-new-namespaces\s+CREATE\s+core\/namespaces\s+kubemod-system\s+yes/,
    );
    expect(rows).toMatch(/kubemod-system\/add-flavor\s+CREATE,UPDATE\s+core\/pods\s+kubemod-system,\/\.\*\//);
    expect(rows).toMatch(/default\/reject-external-ips\s+CREATE,UPDATE\s+core\/services\s+default\s+no/);
    const yaml = rest.slice(0, rest.search(/^\d+ webhook rules/m));
    const registration = parse(yaml) as JsonObject;
    expect(registration.name).toBe('dragnet.kubemod.io');
    expect((registration.rules as JsonObject[]).map((x) => x.resources)).toEqual([
      ['pods', 'services'],
      ['namespaces'],
      ['deployments'],
    ]);
    expect(rest).toContain('3 webhook rules, 1 condition (');
  });

  test('examples/: each resource once per groups, versions and scope (no pods CREATE+UPDATE, then CREATE, then UPDATE)', async () => {
    const r = await scope([join(ROOT, 'examples'), '-o', 'json']);
    expect(r.code).toBe(0);
    const rules = (JSON.parse(r.stdout) as { registration: { rules: JsonObject[] } }).registration.rules;
    const seen = new Map<string, string[]>();
    for (const rule of rules)
      for (const resource of rule.resources as string[]) {
        const key = JSON.stringify([rule.apiGroups, rule.apiVersions, rule.scope, resource]);
        seen.set(key, [...(seen.get(key) ?? []), (rule.operations as string[]).join('+')]);
      }
    expect([...seen].filter(([, ops]) => ops.length > 1)).toEqual([]);
    expect(rules.some((x) => (x.resources as string[]).includes('pods'))).toBe(true);
  });

  test('JSON output; CRDs among the files map their kinds; a configuration file narrows its own net', async () => {
    const crd = write(
      'crds/widgets.yaml',
      `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions: [{name: v1, served: true, storage: true}]
`,
    );
    const widgets = write(
      'rules/widgets.yaml',
      deploymentsRule.replace('Deployment', 'Widget').replace('label-deployments', 'widgets'),
    );
    const wildcard = write(
      'wildcard.yaml',
      `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: kubemod-mutating-webhook-configuration}
webhooks:
  - name: dragnet.kubemod.io
    rules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*'], scope: '*'}]
`,
    );
    const r = await scope([widgets, crd, '--configuration', wildcard, '--output', 'json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as {
      registration: { rules: JsonObject[] };
      rules: Array<{ resources: string[]; notes: string[] }>;
    };
    expect(out.rules[0].resources).toEqual(['example.com/widgets']);
    expect(out.registration.rules).toEqual([
      {
        apiGroups: ['example.com'],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['widgets'],
        scope: 'Namespaced',
      },
    ]);
    // Without the CRD the kind is unknown: the rule fails wide, and says why.
    const blind = JSON.parse((await scope([widgets, '--output', 'json'])).stdout) as typeof out;
    expect(blind.rules[0].notes.join()).toContain('kind Widget is not served');
  });

  test('bundle.yaml as the configuration: the same as the default net', async () => {
    const rule = write('one.yaml', deploymentsRule);
    const withBundle = await scope([rule, '--configuration', join(ROOT, 'bundle.yaml'), '--output', 'json']);
    const byDefault = await scope([rule, '--output', 'json']);
    expect(withBundle.code).toBe(0);
    expect(withBundle.stdout).toBe(byDefault.stdout);
  });

  test('an invalid ModRule is named with its file and field; exit 1 (bad input)', async () => {
    const bad = write('bad.yaml', deploymentsRule.replace('matchValue: Deployment', "matchRegex: '('"));
    const r = await scope([bad]);
    expect(r.code).toBe(EXIT.error);
    expect(r.stderr).toContain(`${bad}: ModRule shop/label-deployments: spec.match[0].matchRegex`);
    const noConfig = await scope([join(ROOT, 'examples', 'local', 'rules'), '--configuration', bad]);
    expect(noConfig.code).toBe(EXIT.error);
    expect(noConfig.stderr).toContain('no MutatingWebhookConfiguration with a dragnet.kubemod.io webhook');
  });

  test('bad usage: exit 1', async () => {
    expect((await scope([])).code).toBe(EXIT.error);
    expect((await scope(['x', '--output', 'yaml'])).code).toBe(EXIT.error);
    expect((await scope(['--help'])).stdout).toContain('Exit status: 0 success');
  });

  test('rules in conflict: each conflict once after the registration, with both rules and the path; exit 2', async () => {
    const r = await scope([join(ROOT, 'fixtures', 'conflicts')]);
    expect(r.code).toBe(EXIT.finding);
    const lines = r.stdout.split('\n').filter((l) => l.startsWith('conflict'));
    expect(lines.map((l) => l.slice(0, l.indexOf(':')))).toEqual([
      'conflict (value)',
      'conflict (shape)',
      'conflict (idempotence)',
      'conflict (reject-after-patch)',
    ]);
    expect(lines[0]).toContain('shop/team-db and shop/team-web (tier 0) both write /metadata/labels/team');
    const json = JSON.parse(
      (await scope([join(ROOT, 'fixtures', 'conflicts'), '-o', 'json'])).stdout,
    ) as JsonObject;
    expect((json.conflicts as JsonObject[])[3]).toMatchObject({
      kind: 'reject-after-patch',
      rule: 'shop/pin-latest',
      other: 'shop/no-latest',
      path: '/spec/containers/*/image',
      on: 'Pod',
    });
    expect((await scope([join(ROOT, 'examples')])).code).toBe(EXIT.ok);
  });
});
