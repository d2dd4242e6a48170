// Text for a terminal of a given width: long lines wrapped at spaces (a word longer than the width is cut into
// pieces), ANSI colours not counted. Nothing is left out: what does not fit goes on the next line.

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
// eslint-disable-next-line no-control-regex
const ANSI_AT_START = /^\u001b\[[0-9;]*m/;

/** The columns a string takes on a terminal (colour codes take none). */
export function visibleLength(s: string): number {
  return s.replace(ANSI, '').length;
}

// A word too long for the width, in pieces of at most the width: cut after its last "/" that fits (a resource,
// a path), else at the width. Colour codes stay with the text they colour.
function pieces(word: string, width: number): string[] {
  const out: string[] = [];
  let rest = word;
  while (visibleLength(rest) > width) {
    const cut = cutAt(rest, width);
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  out.push(rest);
  return out;
}

// The string index where the first `width` visible columns of `s` end, moved back to just after a "/" when one is
// in the second half.
function cutAt(s: string, width: number): number {
  let visible = 0;
  let slash = -1;
  let i = 0;
  while (i < s.length && visible < width) {
    const code = s[i] === '\u001b' ? ANSI_AT_START.exec(s.slice(i)) : null;
    if (code) {
      i += code[0].length;
      continue;
    }
    if (s[i] === '/' && visible + 1 > width / 2) slash = i + 1;
    visible++;
    i++;
  }
  return slash > 0 && i < s.length ? slash : i;
}

/**
 * Splits `text` (one line) into lines of at most `width` columns, breaking at spaces; the first line keeps the text's
 * own indentation and the others get `indent` (default: that indentation and two more spaces).
 */
export function wrapLine(text: string, width: number, indent?: string): string[] {
  if (visibleLength(text) <= width) return [text];
  const own = /^ */.exec(text)![0];
  const next = indent ?? `${own}  `;
  const room = (first: boolean) => Math.max(1, width - (first ? own : next).length);
  const lines: string[] = [];
  let line = '';
  let length = 0;
  const flush = () => {
    lines.push(`${lines.length === 0 ? own : next}${line}`);
    line = '';
    length = 0;
  };
  for (const word of text.slice(own.length).split(' ')) {
    const w = visibleLength(word);
    if (length > 0 && length + 1 + w > room(lines.length === 0)) flush();
    if (length === 0 && w > room(lines.length === 0)) {
      const parts = pieces(word, room(lines.length === 0));
      for (const part of parts.slice(0, -1)) {
        line = part;
        flush();
      }
      line = parts[parts.length - 1];
      length = visibleLength(line);
      continue;
    }
    line = length === 0 ? word : `${line} ${word}`;
    length += (length === 0 ? 0 : 1) + w;
  }
  if (length > 0 || lines.length === 0) flush();
  return lines;
}

/** Every line of `text` wrapped to `width` (see wrapLine). */
export function wrapText(text: string, width: number): string {
  return text
    .split('\n')
    .flatMap((l) => wrapLine(l, width))
    .join('\n');
}

/**
 * Column widths for a table at most `width` wide (`gap` columns between cells): the natural widths when they fit,
 * else columns are narrowed group by group in `order` (the widest of a group first, evenly, down to `min` each)
 * until they do; their cells then wrap. Columns in no group keep their width.
 */
export function fitColumns(
  natural: readonly number[],
  width: number,
  gap: number,
  order: ReadonlyArray<readonly number[]>,
  min: number,
): number[] {
  const widths = [...natural];
  const total = () => widths.reduce((n, w) => n + w, 0) + gap * (widths.length - 1);
  for (const group of order) {
    while (total() > width) {
      const widest = Math.max(...group.map((i) => widths[i]));
      if (widest <= min) break;
      // One column narrower at a time, the widest of the group.
      widths[group.find((i) => widths[i] === widest)!]--;
    }
  }
  return widths;
}
