import { loadFixture } from '../fixtures/load';
import { JsonValue } from './json';
import { DuplicateKey } from './yaml-duplicates';
import {
  ManifestSyntaxError,
  parseManifestEntries,
  parseManifestObjects,
  parseYamlDocuments,
  parseYamlValue,
  stringifyManifests,
} from './yaml';

describe('YAML as kubectl reads it (go-yaml v2)', () => {
  test.each<[string, JsonValue]>([
    ['8080', 8080],
    ['"8080"', '8080'],
    ['yes', true],
    ['Off', false],
    ['y', true],
    ['0777', 511],
    ['0x1F', 31],
    ['1_000', 1000],
    ['1.5', 1.5],
    ['.5', 0.5],
    ['1e3', 1000],
    ['.inf', Infinity],
    ['.', '.'],
    ['.e5', '.e5'],
    ['-.', '-.'],
    ['2026-11-23T10:00:00Z', '2026-11-23T10:00:00Z'],
    ['2026-11-23', '2026-11-23'],
    ['10:30', '10:30'],
    ['~', null],
    ['', null],
  ])('scalar %j', (text, expected) => {
    if (expected === Infinity) {
      expect(() => parseYamlValue(text)).toThrow(ManifestSyntaxError);
      return;
    }
    expect(parseYamlValue(text)).toEqual(expected);
  });

  it("keeps managedFields' '.' keys as strings", () => {
    const [deployment] = parseYamlDocuments(
      'metadata:\n  managedFields:\n    - fieldsV1:\n        f:metadata:\n          .: {}\n',
    );
    expect(JSON.stringify(deployment)).toBe(
      '{"metadata":{"managedFields":[{"fieldsV1":{"f:metadata":{".":{}}}}]}}',
    );
  });

  it('round-trips strings a YAML 1.1 reader would otherwise retype', () => {
    const tricky = {
      a: 'yes',
      b: 'on',
      c: '2026-11-23T10:00:00Z',
      d: '0777',
      e: '1e3',
      f: '.',
      g: 'y',
      h: '~',
      i: 'null',
    };
    const text = stringifyManifests([tricky]);
    expect(parseYamlDocuments(text)).toEqual([tricky]);
  });

  it('round-trips the realistic fixtures through a multi-document stream', () => {
    const objects = [loadFixture('deployment'), loadFixture('pod'), loadFixture('service')];
    expect(parseManifestObjects(stringifyManifests(objects))).toEqual(objects);
  });

  it('flattens kind: List and skips empty documents', () => {
    const text = '---\n---\nkind: List\nitems:\n  - {kind: A}\n  - {kind: B}\n---\nkind: C\n';
    expect(parseManifestObjects(text).map((o) => o.kind)).toEqual(['A', 'B', 'C']);
  });

  test.each([
    ['broken syntax', 'a: [1', /document 1: /],
    ['a scalar document', 'kind: A\n---\nhello\n', /document 2: not an object/],
    ['a non-object List item', 'kind: List\nitems: [1]\n', /items\[0\] is not an object/],
    [
      'an alias bomb',
      'a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
      /document 1: /,
    ],
  ])('%s is a ManifestSyntaxError', (_name, text, message) => {
    expect(() => parseManifestObjects(text)).toThrow(ManifestSyntaxError);
    expect(() => parseManifestObjects(text)).toThrow(message);
  });

  it('reads a key given twice as go-yaml does (kubectl, Helm, KubeMod): the last one wins, and says where', () => {
    const duplicates: DuplicateKey[] = [];
    const text =
      'kind: A\nmetadata:\n  labels: {app: x, app: z}\nkind: B\n---\nkind: List\nitems:\n  - {kind: C, kind: D}\n';
    expect(parseYamlDocuments(text, duplicates)).toEqual([
      { kind: 'B', metadata: { labels: { app: 'z' } } },
      { kind: 'List', items: [{ kind: 'D' }] },
    ]);
    expect(duplicates).toEqual([
      { document: 1, path: ['metadata', 'labels'], key: 'app', line: 3, ignored: [3] },
      { document: 1, path: [], key: 'kind', line: 4, ignored: [1] },
      { document: 2, path: ['items', 0], key: 'kind', line: 8, ignored: [8] },
    ]);
    const entries = parseManifestEntries(text);
    expect(entries.map((e) => [e.object.kind, e.document, e.duplicates.map((d) => d.key)])).toEqual([
      ['B', 1, ['app', 'kind']],
      ['D', 2, ['kind']],
    ]);
    expect(parseYamlValue('a: 1\na: 2')).toEqual({ a: 2 });
  });

  it('refuses several documents where one value is expected', () => {
    expect(() => parseYamlValue('a: 1\n---\nb: 2')).toThrow(/one YAML document/);
  });
});
