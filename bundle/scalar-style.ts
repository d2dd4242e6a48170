// How the emitter (emit.ts) quotes a string scalar: go-yaml v2's analysis of the characters, and the YAML 1.1
// resolution rules that decide whether a plain scalar would read back as a string.

/** The scalar styles the emitter writes. */
export type Style = 'plain' | 'single' | 'double' | 'literal';

/** The style go-yaml v2 writes `s` in: plain when it reads back as the same string, else quoted or literal. */
export function chooseStyle(s: string, simpleKey: boolean): Style {
  const a = analyze(s);
  let style: Style;
  if (s.includes('\n')) style = 'literal';
  else if (resolvesToString(s) && !isBase60Float(s)) style = 'plain';
  else style = 'double';

  if (style === 'plain') {
    if (!a.blockPlain || (s === '' && simpleKey)) style = 'single';
  }
  if (style === 'single' && !a.singleQuoted) style = 'double';
  if (style === 'literal' && (!a.block || simpleKey)) style = 'double';
  return style;
}

interface Analysis {
  blockPlain: boolean;
  singleQuoted: boolean;
  block: boolean;
}

export const isBreak = (c: string | undefined): boolean => c === '\n' || c === '\r';
const isBlankOrEnd = (c: string | undefined): boolean =>
  c === undefined || c === ' ' || c === '\t' || isBreak(c);

/** True for the characters go-yaml writes as they are (yaml_emitter_analyze_scalar's is_printable). */
export function isPrintable(c: string): boolean {
  const code = c.codePointAt(0) ?? 0;
  return (
    code === 0x0a ||
    (code >= 0x20 && code <= 0x7e) ||
    code === 0x85 ||
    (code >= 0xa0 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd && code !== 0xfeff) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

// go-yaml's yaml_emitter_analyze_scalar, restricted to the block context we write.
function analyze(s: string): Analysis {
  if (s === '') return { blockPlain: false, singleQuoted: true, block: false };
  const chars = Array.from(s);
  let blockIndicators = s.startsWith('---') || s.startsWith('...');
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let previousSpace = false;
  let previousBreak = false;
  let lineBreaks = false;
  let precededByWhitespace = true;
  let followedByWhitespace = isBlankOrEnd(chars[1]);
  chars.forEach((c, i) => {
    if (i === 0) {
      if ('#,[]{}&*!|>\'"%@`'.includes(c)) blockIndicators = true;
      if ((c === '?' || c === ':' || c === '-') && followedByWhitespace) blockIndicators = true;
    } else {
      if (c === ':' && followedByWhitespace) blockIndicators = true;
      if (c === '#' && precededByWhitespace) blockIndicators = true;
    }
    if (!isPrintable(c)) special = true;
    if (c === ' ') {
      if (i === 0) leadingSpace = true;
      if (i === chars.length - 1) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      previousSpace = true;
      previousBreak = false;
    } else if (isBreak(c)) {
      lineBreaks = true;
      if (i === 0) leadingBreak = true;
      if (i === chars.length - 1) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      previousBreak = true;
      previousSpace = false;
    } else {
      previousSpace = false;
      previousBreak = false;
    }
    precededByWhitespace = isBlankOrEnd(c);
    followedByWhitespace = isBlankOrEnd(chars[i + 2]);
  });
  let blockPlain = true;
  let singleQuoted = true;
  let block = true;
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) blockPlain = false;
  if (trailingSpace) block = false;
  if (breakSpace) blockPlain = singleQuoted = false;
  if (spaceBreak || special) blockPlain = singleQuoted = block = false;
  if (lineBreaks || blockIndicators) blockPlain = false;
  return { blockPlain, singleQuoted, block };
}

const NON_STRING_WORDS = new Set([
  '',
  '~',
  'null',
  'Null',
  'NULL',
  'y',
  'Y',
  'yes',
  'Yes',
  'YES',
  'n',
  'N',
  'no',
  'No',
  'NO',
  'true',
  'True',
  'TRUE',
  'false',
  'False',
  'FALSE',
  'on',
  'On',
  'ON',
  'off',
  'Off',
  'OFF',
  '.inf',
  '.Inf',
  '.INF',
  '+.inf',
  '+.Inf',
  '+.INF',
  '-.inf',
  '-.Inf',
  '-.INF',
  '.nan',
  '.NaN',
  '.NAN',
]);
const INT = /^[-+]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)$/;
const FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const TIMESTAMP =
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(([Tt]| +)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]*)?(Z|[-+][0-9]{1,2}(:[0-9]{2})?)?)?$/;

// True when go-yaml would read `s`, written plain, back as a string (YAML 1.1 rules).
function resolvesToString(s: string): boolean {
  if (NON_STRING_WORDS.has(s)) return false;
  if (!/^[-+.0-9]/.test(s)) return true;
  if (/^[0-9]/.test(s) && TIMESTAMP.test(s)) return false;
  const plain = s.replace(/_/g, '');
  return !(INT.test(plain) || FLOAT.test(plain));
}

function isBase60Float(s: string): boolean {
  return /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/.test(s);
}
