// Showing where in a text something went wrong: the line, and a caret under the column.

/** A 1-based line and column in a text. */
export interface TextPosition {
  line: number;
  column: number;
}

// Longer lines (a base64 value, minified JSON) are cut to a window around the column.
const MAX_WIDTH = 120;

/** `line` and, below it, a caret under 1-based `column` (tabs kept so the caret lines up), both after `indent`. */
export function caretLines(line: string, column: number, indent = '  '): string {
  let text = line;
  let at = Math.max(0, column - 1);
  if (text.length > MAX_WIDTH) {
    const start = Math.min(Math.max(0, at - MAX_WIDTH / 2), text.length - MAX_WIDTH);
    const cut = text.slice(start, start + MAX_WIDTH);
    text = `${start > 0 ? '…' : ''}${cut}${start + MAX_WIDTH < line.length ? '…' : ''}`;
    at = at - start + (start > 0 ? 1 : 0);
  }
  const pad = text.slice(0, at).replace(/[^\t]/g, ' ') + ' '.repeat(Math.max(0, at - text.length));
  return `${indent}${text}\n${indent}${pad}^\n`;
}

/**
 * The line of `text` at `position` with a caret under its column, after the line before it (an unclosed bracket
 * or quote there is often the cause), numbered as an editor shows them.
 */
export function excerpt(text: string, position: TextPosition): string {
  const lines = text.split(/\r?\n/);
  const index = Math.min(Math.max(position.line, 1), lines.length) - 1;
  const width = String(index + 1).length;
  const gutter = (n: number | null): string =>
    ` ${n === null ? ' '.repeat(width) : String(n).padStart(width)} | `;
  const before = index > 0 ? cut(`${gutter(index)}${lines[index - 1]}`) + '\n' : '';
  const [line, caret] = caretLines(lines[index], position.column, '').split('\n');
  return `${before}${gutter(index + 1)}${line}\n${gutter(null)}${caret}\n`;
}

function cut(line: string): string {
  return line.length > MAX_WIDTH + 10 ? `${line.slice(0, MAX_WIDTH + 10)}…` : line;
}
