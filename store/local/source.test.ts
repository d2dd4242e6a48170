import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../util/logger';
import { RuleStore } from '../rules';
import { ReferenceObjects } from '../references';
import { listManifestFiles, ManifestError, parseManifests } from './load';
import { LoadReport, LocalRuleSource } from './source';

const ruleYaml = (name: string, label: string, namespace = 'default') => `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  type: Patch
  match:
    - select: '$.kind'
      matchValue: Deployment
  patch:
    - op: add
      path: /metadata/labels/${label}
      value: 'yes'
`;

const invalidRuleYaml = (name: string) => `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata:
  name: ${name}
  namespace: default
spec:
  type: Patch
  match:
    - select: '$.metadata.name'
      matchRegex: '(abc'
  patch:
    - op: add
      path: /metadata/labels/x
      value: 'y'
`;

function ruleNames(store: RuleStore, namespace: string | null = 'default'): string[] {
  return store
    .snapshot()
    .rulesFor(namespace)
    .map((r) => `${r.namespace}/${r.name}`);
}

function labelOf(store: RuleStore, name: string): string | undefined {
  const r = store
    .snapshot()
    .rulesFor('default')
    .find((x) => x.name === name);
  return r?.patch[0]?.path;
}

describe('parseManifests', () => {
  it('reads multi-document YAML, skips empty documents and flattens Lists', () => {
    const docs = parseManifests(
      `---\n${ruleYaml('a', 'x')}---\n---\napiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Node\n    metadata: {name: n1}\n`,
      'f.yaml',
    );
    expect(docs.map((d) => d.kind)).toEqual(['ModRule', 'Node']);
  });

  it.each([
    ['bad YAML', 'kind: [unclosed', /f.yaml: /],
    ['a scalar document', 'just a string', /not an object/],
  ])('throws ManifestError for %s', (_n, text, reason) => {
    expect(() => parseManifests(text, 'f.yaml')).toThrow(ManifestError);
    expect(() => parseManifests(text, 'f.yaml')).toThrow(reason);
  });
});

describe('LocalRuleSource', () => {
  let dir: string;
  let source: LocalRuleSource | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'modrule-local-'));
  });
  afterEach(async () => {
    source?.close();
    source = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  function open(store: RuleStore, paths = [dir]): LocalRuleSource {
    source = new LocalRuleSource({ paths, store, logger: silentLogger(), debounceMs: 20, pollMs: 50 });
    return source;
  }

  it('holds every other object for the rules to read, and follows edits and deletions of the files', async () => {
    const references = new ReferenceObjects();
    const store = new RuleStore();
    source = new LocalRuleSource({ paths: [dir], store, references, logger: silentLogger() });
    const cm = (host: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: registry-mirror, namespace: platform}\ndata: {host: ${host}}\n`;
    await writeFile(join(dir, 'objects.yaml'), cm('one.example.com'));
    await writeFile(
      join(dir, 'owners.yaml'),
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, uid: u1}\n',
    );
    const report = await source.reload();
    expect(report.objects).toBe(2);
    const host = () =>
      (references.get('', 'ConfigMap', 'platform', 'registry-mirror')?.data as { host?: string } | undefined)
        ?.host;
    expect(host()).toBe('one.example.com');
    expect(references.get('apps', 'Deployment', 'shop', 'web')).toBeDefined();
    await writeFile(join(dir, 'objects.yaml'), cm('two.example.com'));
    await rm(join(dir, 'owners.yaml'));
    await source.reload();
    expect(host()).toBe('two.example.com');
    expect(references.get('apps', 'Deployment', 'shop', 'web')).toBeUndefined();
  });

  it('loads rules, namespaces and nodes from nested folders and defaults the rule namespace', async () => {
    await mkdir(join(dir, 'a', 'b'), { recursive: true });
    await writeFile(join(dir, 'a', 'one.yaml'), ruleYaml('one', 'x'));
    await writeFile(
      join(dir, 'a', 'b', 'two.yml'),
      ruleYaml('two', 'y').replace('  namespace: default\n', ''),
    );
    await writeFile(
      join(dir, 'cluster.yaml'),
      'apiVersion: v1\nkind: Namespace\nmetadata: {name: default, labels: {color: blue}}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: worker-1}\n',
    );
    await writeFile(join(dir, 'notes.txt'), 'not a manifest');
    await writeFile(join(dir, 'review.json'), '{"kind": "AdmissionReview"}');
    const store = new RuleStore();
    const report = await open(store).reload();
    expect(report).toEqual({ files: 3, rules: 2, namespaces: 1, nodes: 1, objects: 0, errors: [] });
    expect(ruleNames(store)).toEqual(['default/one', 'default/two']);
    expect(store.snapshot().namespace('default')).toMatchObject({ metadata: { labels: { color: 'blue' } } });
    expect(store.snapshot().node('worker-1')).toBeDefined();
    // Defaults as the mutating webhook fills them in a cluster.
    expect(store.snapshot().rulesFor('default')[0].tier).toBe(0);
  });

  it('keeps the previous version of a rule that turns invalid, while other changes apply', async () => {
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'x'));
    await writeFile(join(dir, 'two.yaml'), ruleYaml('two', 'y'));
    const store = new RuleStore({ keepSource: false }); // as serve --local holds rules
    const s = open(store);
    await s.reload();
    await writeFile(join(dir, 'one.yaml'), invalidRuleYaml('one'));
    await writeFile(join(dir, 'two.yaml'), ruleYaml('two', 'z'));
    await writeFile(join(dir, 'three.yaml'), invalidRuleYaml('three'));
    const report = await s.reload();
    expect(ruleNames(store)).toEqual(['default/one', 'default/two']);
    expect(labelOf(store, 'one')).toBe('/metadata/labels/x'); // the old, valid one
    expect(labelOf(store, 'two')).toBe('/metadata/labels/z'); // the new one
    expect(report.errors).toEqual([
      expect.stringMatching(
        /one.yaml: ModRule default\/one is invalid \(previous version stays in force\): .*matchRegex/,
      ),
      expect.stringMatching(/three.yaml: ModRule default\/three is invalid \(not loaded\)/),
    ]);
  });

  it('keeps the previous contents of a file that stops parsing', async () => {
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'x'));
    const store = new RuleStore();
    const s = open(store);
    await s.reload();
    await writeFile(join(dir, 'one.yaml'), 'kind: [broken');
    const report = await s.reload();
    expect(ruleNames(store)).toEqual(['default/one']);
    expect(report.errors).toEqual([expect.stringMatching(/one.yaml: /)]);
  });

  it('a file that stops parsing keeps its rules, Namespaces and Nodes over reloads until it parses again', async () => {
    const cluster = 'apiVersion: v1\nkind: Namespace\nmetadata: {name: default, labels: {color: blue}}\n';
    await writeFile(
      join(dir, 'one.yaml'),
      `${ruleYaml('one', 'x')}---\n${ruleYaml('two', 'y')}---\n${cluster}`,
    );
    await writeFile(join(dir, 'other.yaml'), ruleYaml('three', 'z'));
    const store = new RuleStore({ keepSource: false });
    const s = open(store);
    await s.reload();
    const before = store.snapshot().rulesFor('default');
    await writeFile(join(dir, 'one.yaml'), 'kind: [broken');
    await writeFile(join(dir, 'other.yaml'), ruleYaml('three', 'w'));
    for (let i = 0; i < 2; i++) {
      const report = await s.reload();
      expect(report).toMatchObject({ files: 2, rules: 3, namespaces: 1 });
      expect(report.errors).toEqual([expect.stringMatching(/one.yaml: /)]);
      expect(ruleNames(store)).toEqual(['default/one', 'default/three', 'default/two']);
      // The very rules compiled from the file before it broke; the other file's edit applies.
      const now = store.snapshot().rulesFor('default');
      expect(now.find((r) => r.name === 'one')).toBe(before.find((r) => r.name === 'one'));
      expect(labelOf(store, 'two')).toBe('/metadata/labels/y');
      expect(labelOf(store, 'three')).toBe('/metadata/labels/w');
      expect(store.snapshot().namespace('default')).toMatchObject({
        metadata: { labels: { color: 'blue' } },
      });
    }
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'v'));
    const report = await s.reload();
    expect(report.errors).toEqual([]);
    expect(ruleNames(store)).toEqual(['default/one', 'default/three']);
    expect(labelOf(store, 'one')).toBe('/metadata/labels/v');
    expect(store.snapshot().namespace('default')).toBeUndefined();
  });

  it('a rule kept at its previous version stays so when its file then stops parsing', async () => {
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'x'));
    const store = new RuleStore({ keepSource: false });
    const s = open(store);
    await s.reload();
    await writeFile(join(dir, 'one.yaml'), invalidRuleYaml('one'));
    expect((await s.reload()).errors).toEqual([expect.stringMatching(/previous version stays in force/)]);
    await writeFile(join(dir, 'one.yaml'), 'kind: [broken');
    expect((await s.reload()).errors).toEqual([expect.stringMatching(/one.yaml: /)]);
    expect(labelOf(store, 'one')).toBe('/metadata/labels/x');
    // Fixed and then invalid again: the fixed version is now the one kept.
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'u'));
    await s.reload();
    await writeFile(join(dir, 'one.yaml'), invalidRuleYaml('one'));
    await s.reload();
    expect(labelOf(store, 'one')).toBe('/metadata/labels/u');
  });

  it('a new invalid rule is left out; a duplicate definition is reported and the last one wins', async () => {
    await writeFile(join(dir, 'a.yaml'), ruleYaml('one', 'x'));
    await writeFile(join(dir, 'b.yaml'), `${ruleYaml('one', 'y')}---\n${invalidRuleYaml('bad')}`);
    const store = new RuleStore({ keepSource: false });
    const report = await open(store).reload();
    expect(report.rules).toBe(1);
    expect(report.errors).toEqual([
      expect.stringMatching(/b.yaml: ModRule default\/one is defined more than once; the last one wins/),
      expect.stringMatching(
        /b.yaml: ModRule default\/bad is invalid \(not loaded\): spec.match\[0\].matchRegex/,
      ),
    ]);
    expect(labelOf(store, 'one')).toBe('/metadata/labels/y');
  });

  it('drops the rules of a deleted file', async () => {
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'x'));
    await writeFile(join(dir, 'two.yaml'), ruleYaml('two', 'y'));
    const store = new RuleStore();
    const s = open(store);
    await s.reload();
    await unlink(join(dir, 'two.yaml'));
    await s.reload();
    expect(ruleNames(store)).toEqual(['default/one']);
  });

  it('reloads by itself when a watched file changes', async () => {
    await writeFile(join(dir, 'one.yaml'), ruleYaml('one', 'x'));
    const store = new RuleStore();
    const s = open(store);
    await s.reload();
    s.watch();
    const reloaded = new Promise<LoadReport>((resolve) => s.onReload(resolve));
    await writeFile(join(dir, 'two.yaml'), ruleYaml('two', 'y'));
    await reloaded;
    // A reload may have raced the write; wait until the store shows the new file.
    for (let i = 0; i < 50 && ruleNames(store).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(ruleNames(store)).toEqual(['default/one', 'default/two']);
  });

  it('refuses a missing path up front', async () => {
    await expect(listManifestFiles([join(dir, 'missing')])).rejects.toThrow(ManifestError);
  });
});
