import { LineCounter, parseAllDocuments } from 'yaml';
import { MANIFEST_READ_OPTIONS } from './yaml';
import { dropShadowedKeys, duplicateKeyMessage, duplicateKeyProblem, duplicateKeys } from './yaml-duplicates';

function parse(text: string) {
  const lines = new LineCounter();
  const [doc] = parseAllDocuments(text, { ...MANIFEST_READ_OPTIONS, lineCounter: lines });
  return { doc, duplicates: duplicateKeys(doc, 1, lines) };
}

describe('duplicateKeys', () => {
  it('finds keys given twice or more, with the line that wins and those ignored', () => {
    const { duplicates } = parse('data:\n  a: 1\n  b: 2\n  a: 3\n  a: 4\nitems:\n  - {x: 1, x: 2}\n');
    expect(duplicates).toEqual([
      { document: 1, path: ['data'], key: 'a', line: 5, ignored: [2, 4] },
      { document: 1, path: ['items', 0], key: 'x', line: 7, ignored: [7] },
    ]);
    expect(duplicateKeyMessage(duplicates[0])).toBe(
      'duplicate key "a" in data: the last one (line 5) wins, as kubectl and Helm read it; lines 2, 4 are ignored',
    );
    expect(duplicateKeyProblem(duplicates[1])).toEqual({
      field: 'items[0].x',
      message:
        'given more than once (lines 7 and 7): kubectl would keep the last one without a word, and the others may be ' +
        'what was meant; write it once',
    });
  });

  it('counts only what takes effect: a shadowed value is not searched, YAML 1.1 merge keys may repeat', () => {
    const { doc, duplicates } = parse(
      'base: &b {k: 1}\nspec:\n  x: 1\n  x: 2\nspec:\n  z: 1\nother:\n  <<: *b\n  <<: {m: 2}\n',
    );
    expect(duplicates.map((d) => [d.path, d.key])).toEqual([[[], 'spec']]);
    expect(doc.toJS()).toMatchObject({ spec: { z: 1 } });
  });
});

describe('dropShadowedKeys', () => {
  it('leaves the pairs that win, comments and order of the rest included', () => {
    const { doc } = parse('# head\na: 1 # first\nb: {c: 1, c: 2}\na: 3 # last\n');
    dropShadowedKeys(doc);
    expect(doc.toString()).toBe('# head\nb: { c: 2 }\na: 3 # last\n');
  });
});
