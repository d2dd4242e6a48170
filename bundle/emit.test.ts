import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { JsonValue } from '../util/json';
import { KustomizeError, buildKustomization, rewriteImage } from './build';
import { EmitError, compareKeys, emitDocument, emitYamlDocuments } from './emit';

const EMITTER_CASES = path.join(__dirname, 'testdata/emitter');
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe('emitDocument writes scalars as kubectl kustomize does', () => {
  // Expected forms are what kubectl kustomize (kustomize v5.5) printed for the same strings.
  it.each<[string, string]>([
    ['plain', 'plain'],
    ['$.kind', '$.kind'],
    ['yes', '"yes"'],
    ['on', '"on"'],
    ['~', '"~"'],
    ['', '""'],
    ['42', '"42"'],
    ['0755', '"0755"'],
    ['0x1F', '"0x1F"'],
    ['1e3', '"1e3"'],
    ['.5', '".5"'],
    ['0.1.0', '0.1.0'],
    ['2020-01-01', '"2020-01-01"'],
    ['1:20', '"1:20"'],
    ['a: b', "'a: b'"],
    ['a #b', "'a #b'"],
    ['a#b', 'a#b'],
    ['-', "'-'"],
    ['-x', '-x'],
    ['*x', "'*x'"],
    ['"true"', `'"true"'`],
    ["it's", "it's"],
    ['x ', "'x '"],
    [' x', "' x'"],
    ['{{ .Target.metadata.name }}', "'{{ .Target.metadata.name }}'"],
    ['<<', '<<'],
    ['http://example.com:8080/path', 'http://example.com:8080/path'],
    ['tab\there', '"tab\\there"'],
    ['héllo wörld', 'héllo wörld'],
  ])('%j as %s', (value, expected) => {
    expect(emitDocument({ k: value })).toBe(`k: ${expected}\n`);
  });

  it('writes multi-line strings as literal blocks with the right chomping', () => {
    expect(emitDocument({ k: 'a\nb' })).toBe('k: |-\n  a\n  b\n');
    expect(emitDocument({ k: 'a\nb\n' })).toBe('k: |\n  a\n  b\n');
    expect(emitDocument({ k: '  a\nb' })).toBe('k: |2-\n    a\n  b\n');
  });

  it('folds long plain scalars after column 80', () => {
    const long = Array.from({ length: 20 }, () => 'word').join(' ');
    const out = emitDocument({ key: long });
    expect(out.split('\n')[0].length).toBeGreaterThan(80);
    expect(out).toBe(`key: ${long.slice(0, 79)}\n  ${long.slice(80)}\n`);
  });

  it('writes numbers, booleans, null, empty collections and nesting', () => {
    expect(emitDocument({ b: [1, true, null, {}, [], [['x']]], a: { z: 1, y: -2 } })).toBe(
      'a:\n  "y": -2\n  z: 1\nb:\n- 1\n- true\n- null\n- {}\n- []\n- - - x\n',
    );
  });

  it('refuses numbers kustomize would print differently', () => {
    expect(() => emitDocument({ k: 1.5 })).toThrow(EmitError);
  });

  it('joins documents with ---', () => {
    expect(emitYamlDocuments([{ a: 1 }, { b: 2 }])).toBe('a: 1\n---\nb: 2\n');
  });
});

describe('compareKeys (go-yaml key order)', () => {
  it.each<[string, string[]]>([
    ['non-letters before letters', ['aB', 'a_b', 'a-b']],
    ['digit runs as numbers', ['a10', 'a9', 'a09']],
    ['plain alphabetical', ['spec', 'kind', 'apiVersion', 'metadata']],
  ])('%s', (_name, keys) => {
    const expected: Record<string, string[]> = {
      'non-letters before letters': ['a-b', 'a_b', 'aB'],
      'digit runs as numbers': ['a9', 'a09', 'a10'],
      'plain alphabetical': ['apiVersion', 'kind', 'metadata', 'spec'],
    };
    expect([...keys].sort(compareKeys)).toEqual(expected[_name]);
  });
});

describe('rewriteImage', () => {
  const images = [
    { name: 'modrule', newName: 'ghcr.io/modrule/modrule', newTag: '0.1.0' },
    { name: 'busybox', newTag: '1.36' },
    { name: 'registry.local:5000/app', newName: 'ghcr.io/acme/app' },
    { name: 'pinned', digest: 'sha256:abc' },
    { name: 'both', newTag: '2', digest: 'sha256:def' },
  ];
  it.each([
    ['modrule', 'ghcr.io/modrule/modrule:0.1.0'],
    ['modrule:dev', 'ghcr.io/modrule/modrule:0.1.0'],
    ['busybox:latest', 'busybox:1.36'],
    ['registry.local:5000/app', 'ghcr.io/acme/app'],
    ['registry.local:5000/app:1.0@sha256:abc', 'ghcr.io/acme/app:1.0@sha256:abc'],
    ['pinned:1', 'pinned@sha256:abc'],
    ['both:1@sha256:abc', 'both:2@sha256:def'],
    ['other:1', 'other:1'],
  ])('%s -> %s', (image, expected) => {
    expect(rewriteImage(image, images)).toBe(expected);
  });
});

describe('buildKustomization', () => {
  it('reproduces the kustomize output recorded in testdata/emitter/expected.yaml', () => {
    expect(buildKustomization(EMITTER_CASES)).toBe(
      fs.readFileSync(path.join(EMITTER_CASES, 'expected.yaml'), 'utf8'),
    );
  });

  (hasKubectl ? it : it.skip)('matches kubectl kustomize on the edge cases', () => {
    const r = spawnSync('kubectl', ['kustomize', EMITTER_CASES], { encoding: 'utf8' });
    expect(r.stdout).toBe(buildKustomization(EMITTER_CASES));
  });

  function tempKustomization(files: Record<string, string>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'modrule-kustomize-'));
    for (const [name, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
    return dir;
  }
  const FIFO = 'sortOptions: {order: fifo}\n';
  const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n';

  it.each<[string, Record<string, string>, RegExp]>([
    [
      'an unsupported field',
      { 'kustomization.yaml': `${FIFO}namePrefix: a-\nresources: [cm.yaml]\n`, 'cm.yaml': configMap },
      /namePrefix/,
    ],
    [
      'an unknown sort order',
      { 'kustomization.yaml': 'sortOptions: {order: alphabetical}\n' },
      /fifo.*legacy/,
    ],
    [
      'sortOptions below the top level (kustomize ignores it there)',
      {
        'kustomization.yaml': 'resources: [inner]\n',
        'inner/kustomization.yaml': `${FIFO}resources: [../cm.yaml]\n`,
        'cm.yaml': configMap,
      },
      /only at the top level/,
    ],
    ['a missing resource', { 'kustomization.yaml': `${FIFO}resources: [nope.yaml]\n` }, /does not exist/],
    [
      'a non-object document',
      { 'kustomization.yaml': `${FIFO}resources: [cm.yaml]\n`, 'cm.yaml': '- 1\n' },
      /Kubernetes object/,
    ],
    [
      'invalid YAML',
      { 'kustomization.yaml': `${FIFO}resources: [cm.yaml]\n`, 'cm.yaml': 'a: [\n' },
      /cm\.yaml/,
    ],
  ])('refuses %s with a clear error', (_name, files, message) => {
    const dir = tempKustomization(files);
    expect(() => buildKustomization(dir)).toThrow(KustomizeError);
    expect(() => buildKustomization(dir)).toThrow(message);
  });

  it("sorts without sortOptions as kustomize's legacy order does (testdata/legacy-order/expected.yaml)", () => {
    const dir = path.join(__dirname, 'testdata/legacy-order');
    expect(buildKustomization(dir)).toBe(fs.readFileSync(path.join(dir, 'expected.yaml'), 'utf8'));
  });

  (hasKubectl ? it : it.skip)('sorts like kubectl kustomize on the legacy-order cases', () => {
    const dir = path.join(__dirname, 'testdata/legacy-order');
    const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    expect(r.stdout).toBe(buildKustomization(dir));
  });

  it('sets an image override at whatever level names the placeholder (make bundle IMAGE=...)', () => {
    const dir = tempKustomization({
      'kustomization.yaml': 'resources: [inner]\n',
      'inner/kustomization.yaml':
        'resources: [pod.yaml]\nimages: [{name: app, newName: example.com/app, newTag: "1"}]\n',
      'inner/pod.yaml':
        'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: app}]\n',
    });
    const image = { name: 'app', newName: 'registry.local:5000/team/app', newTag: '2.0' };
    expect(buildKustomization(dir, { image })).toContain('- image: registry.local:5000/team/app:2.0\n');
    expect(buildKustomization(dir)).toContain('- image: example.com/app:1\n');
  });

  it('refuses a directory without a kustomization', () => {
    const dir = tempKustomization({ 'cm.yaml': configMap });
    expect(() => buildKustomization(dir)).toThrow(/no kustomization\.yaml/);
  });

  it('keeps resource order (fifo) and applies images', () => {
    const dir = tempKustomization({
      'kustomization.yaml': `${FIFO}resources: [b.yaml, a.yaml]\nimages: [{name: app, newTag: "2"}]\n`,
      'a.yaml': configMap,
      'b.yaml':
        'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: app}]\n',
    });
    const out: JsonValue = buildKustomization(dir);
    expect(out).toBe(
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - image: app:2\n    name: c\n---\n' +
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n',
    );
  });
});
