import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../util/logger';
import { splitYamlStream } from '../util/yaml-stream';
import { RuleStore } from '../store/rules';
import { LocalRuleSource } from '../store/local/source';
import { EXIT } from './exit';
import { main } from './main';
import { runCommand, writeRule } from './testing';

// A key given twice: objects to admit are read as kubectl and Helm read them (the last one wins) with a warning on
// stderr, by every reader; a ModRule or a test suite that gives one is refused, naming the field and the lines.

const modrule = (args: string[], stdin = '') => runCommand((a, io) => main(a, io), args, { stdin });
const dir = mkdtempSync(join(tmpdir(), 'modrule-duplicates-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

// As a third-party chart renders it: a label and a data key twice.
const CONFIGMAP = `# Source: chart/templates/settings.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    tier: frontend
    tier: backend
data:
  mode: first
  mode: last
`;
const WARNED = [
  'duplicate key "tier" in metadata.labels: the last one (line 8) wins, as kubectl and Helm read it; line 7 is ignored',
  'duplicate key "mode" in data: the last one (line 11) wins, as kubectl and Helm read it; line 10 is ignored',
];
const LABEL = writeRule('label-configmaps', {
  type: 'Patch',
  match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
  patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
});
const NOTHING = writeRule('match-nothing', {
  type: 'Patch',
  match: [{ select: '$.kind', matchValue: 'Secret' }],
  patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
});
const RULE_TWICE = file(
  'rule-twice.yaml',
  `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata:
  name: twice
spec:
  type: Reject
  match:
    - select: '$.kind'
      matchValue: Secret
      matchValue: ConfigMap
`,
);
const FIELD_TWICE = 'spec.match[0].matchValue: given more than once (lines 9 and 10)';

describe('a key given twice in an object to admit: the last one wins, with a warning', () => {
  it('apply reads it as kubectl does and warns on stderr, for --file and --cluster alike', async () => {
    const input = file('configmap.yaml', CONFIGMAP);
    const r = await modrule(['apply', '--rules', LABEL, '-f', input, '-o', 'json', '--cluster', input]);
    expect(r.code).toBe(EXIT.ok);
    const [verdict] = JSON.parse(r.stdout) as Array<{ object: { metadata: unknown; data: unknown } }>;
    expect(verdict.object.metadata).toMatchObject({ labels: { tier: 'backend', team: 'platform' } });
    expect(verdict.object.data).toEqual({ mode: 'last' });
    // Once per reading: --cluster and --file.
    for (const w of WARNED)
      expect(r.stderr.split('\n').filter((l) => l.endsWith(w))).toEqual([
        `warning: ${input}:${w.includes('tier') ? 8 : 11}: document 1 (ConfigMap settings): ${w}`,
        `warning: ${input}:${w.includes('tier') ? 8 : 11}: document 1 (ConfigMap settings): ${w}`,
      ]);
  });

  it('post-render patches the key that wins (and drops the one it overrides), keeps an untouched document as is', async () => {
    const untouched = await modrule(['post-render', '--rules', NOTHING], CONFIGMAP);
    expect(untouched.code).toBe(EXIT.ok);
    expect(untouched.stdout).toBe(CONFIGMAP);
    expect(untouched.stderr).toBe(
      WARNED.map((w) => `warning: document 1, chart/templates/settings.yaml: ${w}\n`).join(''),
    );
    const patched = await modrule(['post-render', '--rules', LABEL], CONFIGMAP);
    expect(patched.code).toBe(EXIT.ok);
    expect(splitYamlStream(patched.stdout)[0].value).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', labels: { tier: 'backend', team: 'platform' } },
      data: { mode: 'last' },
    });
    expect(patched.stdout).toMatch(/^# Source: chart\/templates\/settings.yaml\n/);
    expect(patched.stdout).not.toContain('frontend');
  });

  it('test reads the resources the same way and warns', async () => {
    const suite = join(mkdtempSync(join(tmpdir(), 'modrule-duplicates-suite-')), 'modrule-test.yaml');
    writeFileSync(
      suite,
      `apiVersion: modrule.io/v1alpha1\nkind: ModRuleTest\nrules: [${LABEL}]\nresources: [${file('cm.yaml', CONFIGMAP)}]\n` +
        'results:\n  - resource: ConfigMap/settings\n    patched: {metadata: {labels: {tier: backend, team: platform}}, data: {mode: last}}\n',
    );
    const r = await modrule(['test', suite]);
    expect(r.stdout).toContain('1 passed, 0 failed');
    expect(r.code).toBe(EXIT.ok);
    for (const w of WARNED) expect(r.stderr).toContain(w);
  });

  it('select evaluates the last one and warns', async () => {
    const r = await modrule(['select', '$.data.mode', '-f', file('select.yaml', CONFIGMAP), '-o', 'json']);
    expect(JSON.parse(r.stdout)).toEqual([{ value: 'last', path: '/data/mode', indices: [] }]);
    expect(r.stderr).toContain(WARNED[1]);
  });
});

describe('a key given twice in a ModRule or a test suite: refused, with the field and the lines', () => {
  it('validate: an error at the line that wins', async () => {
    const r = await modrule(['validate', RULE_TWICE]);
    expect(r.code).toBe(EXIT.finding);
    expect(r.stdout).toContain(`${RULE_TWICE}:10: document 1: ModRule twice: ${FIELD_TWICE}`);
  });

  it.each([
    ['apply', ['apply', '--rules', RULE_TWICE, '-f', '-']],
    ['export', ['export', '--native', '--rules', RULE_TWICE]],
    ['scope', ['scope', RULE_TWICE]],
  ])('%s: bad input, exit 1', async (_name, args) => {
    const r = await modrule(args, CONFIGMAP);
    expect(r.code).toBe(EXIT.error);
    expect(r.stderr).toContain(`ModRule default/twice: ${FIELD_TWICE}`);
  });

  it('a test suite that gives a key twice does not load', async () => {
    const suite = file(
      'twice.modrule-test.yaml',
      'apiVersion: modrule.io/v1alpha1\nkind: ModRuleTest\nkind: Other\n',
    );
    const r = await modrule(['test', suite]);
    expect(r.code).toBe(EXIT.error);
    expect(r.stderr).toContain(`${suite}:3: document 1: kind: given more than once (lines 2 and 3)`);
  });

  it('serve --local keeps the rule out (an invalid rule) and reads a Namespace as kubectl does', async () => {
    const local = mkdtempSync(join(tmpdir(), 'modrule-duplicates-local-'));
    writeFileSync(join(local, 'rule.yaml'), readFileSync(RULE_TWICE, 'utf8'));
    writeFileSync(
      join(local, 'ns.yaml'),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {team: a, team: b}\n',
    );
    const store = new RuleStore();
    const source = new LocalRuleSource({ paths: [local], store, logger: silentLogger() });
    const report = await source.reload();
    source.close();
    expect(report.rules).toBe(0);
    expect(report.errors).toEqual([
      expect.stringContaining(`ModRule default/twice is invalid (not loaded): ${FIELD_TWICE}`),
    ]);
    expect(store.snapshot().namespace('shop')).toMatchObject({ metadata: { labels: { team: 'b' } } });
  });
});
