import { caretLines, excerpt } from './excerpt';

describe('excerpt', () => {
  const text = 'a: 1\nb: [2\nc: 3\n';

  it('shows the line before and the line, numbered, with a caret under the column', () => {
    expect(excerpt(text, { line: 3, column: 1 })).toBe(' 2 | b: [2\n 3 | c: 3\n   | ^\n');
    expect(excerpt(text, { line: 2, column: 4 })).toBe(' 1 | a: 1\n 2 | b: [2\n   |    ^\n');
  });

  it('has no line before the first, and widens the gutter for long files', () => {
    expect(excerpt(text, { line: 1, column: 2 })).toBe(' 1 | a: 1\n   |  ^\n');
    const long = Array.from({ length: 12 }, (_, i) => `k${i}: v`).join('\n');
    expect(excerpt(long, { line: 10, column: 3 })).toBe('  9 | k8: v\n 10 | k9: v\n    |   ^\n');
  });

  it('points past the end of the text at an empty last line', () => {
    expect(excerpt(text, { line: 4, column: 1 })).toBe(' 3 | c: 3\n 4 | \n   | ^\n');
    expect(excerpt(text, { line: 99, column: 1 })).toBe(' 3 | c: 3\n 4 | \n   | ^\n');
  });

  it('keeps tabs before the column so the caret lines up', () => {
    expect(caretLines('\tkey:\tvalue', 7)).toBe('  \tkey:\tvalue\n  \t    \t^\n');
  });

  it('cuts a long line to a window around the column', () => {
    const line = `${'x'.repeat(300)}!${'y'.repeat(300)}`;
    const [shown, caret] = caretLines(line, 301, '').split('\n');
    expect(shown.length).toBeLessThanOrEqual(122);
    expect(shown.startsWith('…') && shown.endsWith('…')).toBe(true);
    expect(shown[caret.indexOf('^')]).toBe('!');
  });
});
