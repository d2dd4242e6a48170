import { fitColumns, visibleLength, wrapLine, wrapText } from './wrap';

describe('wrapLine', () => {
  it('leaves a line that fits alone', () => {
    expect(wrapLine('  short line', 20)).toEqual(['  short line']);
  });

  it('breaks at spaces, the rest indented two more than the line', () => {
    expect(wrapLine('  one two three four five', 14)).toEqual(['  one two', '    three four', '    five']);
  });

  it('cuts a word longer than the line after a "/" in its second half, else at the width', () => {
    expect(wrapLine('Deployment/default/jaeger-collector', 20, '')).toEqual([
      'Deployment/default/',
      'jaeger-collector',
    ]);
    expect(wrapLine('abcdefghijklmnopqrstuvwxyz', 10, '')).toEqual(['abcdefghij', 'klmnopqrst', 'uvwxyz']);
  });

  it('does not count colour codes and keeps them', () => {
    const red = (s: string) => `\u001b[31m${s}\u001b[0m`;
    const lines = wrapLine(red('aaaa bbbb cccc'), 9, '');
    expect(lines.map(visibleLength)).toEqual([9, 4]);
    expect(lines.join(' ')).toBe(red('aaaa bbbb cccc'));
  });

  it('loses nothing: the words come back in order', () => {
    const text = `  ${'word '.repeat(60)}${'x'.repeat(250)} end`;
    const lines = wrapText(text, 40).split('\n');
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(40);
    expect(lines.join('').replace(/\s+/g, '')).toBe(text.replace(/\s+/g, ''));
  });
});

describe('fitColumns', () => {
  it('keeps natural widths that fit', () => {
    expect(fitColumns([4, 8, 6], 30, 2, [[1]], 3)).toEqual([4, 8, 6]);
  });

  it('narrows the groups in order, the widest of a group first, down to the minimum', () => {
    // 10 + 40 + 30 + 2 * 2 = 84 > 50: group [1, 2] first: 40 -> 30, then both evenly to 18 each.
    expect(fitColumns([10, 40, 30], 50, 2, [[1, 2], [0]], 16)).toEqual([10, 18, 18]);
    // Not enough with the first group at its minimum: the next group gives way too.
    expect(fitColumns([20, 40, 30], 40, 2, [[1, 2], [0]], 10)).toEqual([16, 10, 10]);
  });
});
