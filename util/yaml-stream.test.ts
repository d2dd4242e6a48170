import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseYamlDocuments, ManifestSyntaxError } from './yaml';
import { splitYamlStream } from './yaml-stream';

const HELM_TEMPLATE = readFileSync(join(__dirname, '..', 'fixtures', 'helm-template.yaml'), 'utf8');

describe('splitYamlStream', () => {
  it('cuts a stream into documents whose texts join back into it, byte for byte', () => {
    const text =
      '# leading\n---\n# Source: a\napiVersion: v1\nkind: A # c\n# trailing a\n---\n# only\n---\nkind: B\n...\n';
    const docs = splitYamlStream(text);
    expect(docs.map((d) => d.text)).toEqual([
      '# leading\n---\n# Source: a\napiVersion: v1\nkind: A # c\n# trailing a\n',
      '---\n# only\n',
      '---\nkind: B\n...\n',
    ]);
    expect(docs.map((d) => [d.index, d.line, d.value])).toEqual([
      [1, 1, { apiVersion: 'v1', kind: 'A' }],
      [2, 7, null],
      [3, 9, { kind: 'B' }],
    ]);
  });

  it('reads values exactly as the manifest reader does (YAML 1.1 as go-yaml v2)', () => {
    const docs = splitYamlStream(HELM_TEMPLATE);
    expect(docs.map((d) => d.text).join('')).toBe(HELM_TEMPLATE);
    expect(docs.map((d) => d.value).filter((v) => v !== null)).toEqual(
      parseYamlDocuments(HELM_TEMPLATE).filter((v) => v !== null),
    );
    expect(splitYamlStream('a: yes\nb: 0777\nc: "0777"\n')[0].value).toEqual({ a: true, b: 511, c: '0777' });
  });

  it('gives no document for an empty or comment-only stream', () => {
    expect(splitYamlStream('')).toEqual([]);
    expect(splitYamlStream('# nothing\n')).toEqual([]);
  });

  it('names the document, and the line and column of a syntax error', () => {
    expect(() => splitYamlStream('a: 1\n---\nb: [\n')).toThrow(ManifestSyntaxError);
    expect(() => splitYamlStream('a: 1\n---\nb: [\n')).toThrow(
      /^document 2: line 4, column 1: Flow sequence/,
    );
  });

  it('reads a key given twice as Helm and kubectl do (the last one), and lists it', () => {
    const [doc] = splitYamlStream('a: 1\nb: {c: 1}\na: 2\n');
    expect(doc.value).toEqual({ a: 2, b: { c: 1 } });
    expect(doc.duplicates).toEqual([{ document: 1, path: [], key: 'a', line: 3, ignored: [1] }]);
  });
});
