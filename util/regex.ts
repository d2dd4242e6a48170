import RE2 from 're2';
import { messageOf } from './errors';

/** A compiled regular expression that runs in linear time (RE2: no backtracking, no lookaround). */
export interface SafeRegex {
  readonly source: string;
  /** Unanchored search, as Go's regexp.MatchString. */
  test(input: string): boolean;
  /**
   * Go's ReplaceAllString: `replacement` is a Go regexp.Expand template ($1, ${1}, $name, ${name}, $$), empty
   * matches as Go treats them. Linear in the input. `onMatch` is called per match (to charge the work: it may throw to
   * stop). Throws ResultTooLongError before the result grows past `maxLength` characters.
   */
  replaceAll(input: string, replacement: string, onMatch?: MatchHook, maxLength?: number): string;
  /** All matches (Go's FindAllStringSubmatch), each with its submatches (index 0 is the whole match); `onMatch` as for replaceAll. */
  findAll(input: string, limit?: number, onMatch?: MatchHook): string[][];
}

/** Called per match with its UTF-16 offset. */
export type MatchHook = (offset: number) => void;

/** replaceAll's result would be longer than its maxLength. */
export class ResultTooLongError extends Error {
  constructor(readonly maxLength: number) {
    super(`result longer than ${maxLength} characters`);
  }
}

/** Thrown for a pattern RE2 cannot compile; message says what is wrong. */
export class RegexSyntaxError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`invalid regex: ${reason}`);
  }
}

// Patterns come from tenants' ModRules; cap their size so one rule cannot make compile or match costly.
const MAX_PATTERN_LENGTH = 4096;

/** Compiles a Go/RE2 pattern (e.g. `(?i)nginx:1\.14\..*`) once; throws RegexSyntaxError. */
export function compileRegex(pattern: string): SafeRegex {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new RegexSyntaxError(pattern, `pattern longer than ${MAX_PATTERN_LENGTH} characters`);
  }
  let re: RE2;
  let global: RE2;
  try {
    re = new RE2(pattern, 'u');
    global = new RE2(pattern, 'gu');
  } catch (err) {
    throw new RegexSyntaxError(pattern, String(messageOf(err)));
  }
  return {
    source: pattern,
    test: (input) => re.test(input),
    replaceAll: (input, replacement, onMatch, maxLength = Infinity) => {
      const parts = parseGoTemplate(replacement);
      return goReplaceAll(global, input, parts, onMatch, maxLength);
    },
    findAll: (input, limit = -1, onMatch) => {
      const out: string[][] = [];
      goAllMatches(global, input, limit, (m) => {
        onMatch?.(m.index);
        out.push(Array.from(m, (s) => s ?? ''));
      });
      return out;
    },
  };
}

// node-re2 finds each match of a callback replacement by converting offsets from the start of the input, so
// String.prototype.replace with a function takes time quadratic in the input (200,000 matches: 24 s). exec() from
// lastIndex does not: both loops below are linear, and follow Go's regexp package rather than JavaScript's rules
// for empty matches (Go never accepts an empty match right after the previous match: "b*" in "abc" -> "XaXcX").

// UTF-16 length of the character at i (0 at the end): Go advances past an empty match by one rune.
function charWidth(s: string, i: number): number {
  if (i >= s.length) return 0;
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
}

/** Go's Regexp.replaceAll loop over `re` (global). */
function goReplaceAll(
  re: RE2,
  input: string,
  parts: readonly TemplatePart[],
  onMatch: MatchHook | undefined,
  maxLength: number,
): string {
  const out: string[] = [];
  let length = 0;
  const add = (piece: string): void => {
    length += piece.length;
    if (length > maxLength) throw new ResultTooLongError(maxLength);
    out.push(piece);
  };
  let lastMatchEnd = 0;
  let searchPos = 0;
  while (searchPos <= input.length) {
    re.lastIndex = searchPos;
    const m = re.exec(input);
    if (m === null) break;
    const start = m.index;
    const end = start + m[0].length;
    onMatch?.(start);
    add(input.slice(lastMatchEnd, start));
    // Not for an empty match right after the previous match.
    if (end > lastMatchEnd || start === 0) {
      // Measured before it is built: a template of many references to a long group could be huge.
      if (length + expandedLength(parts, m) > maxLength) throw new ResultTooLongError(maxLength);
      add(expand(parts, m));
    }
    lastMatchEnd = end;
    const width = charWidth(input, searchPos);
    if (searchPos + width > end) searchPos += width;
    else if (searchPos + 1 > end) searchPos++;
    else searchPos = end;
  }
  add(input.slice(lastMatchEnd));
  return out.join('');
}

/** Go's Regexp.allMatches loop over `re` (global): at most `limit` matches (all when negative). */
function goAllMatches(re: RE2, input: string, limit: number, deliver: (m: RegExpExecArray) => void): void {
  let prevMatchEnd = -1;
  let delivered = 0;
  for (let pos = 0; (limit < 0 || delivered < limit) && pos <= input.length;) {
    re.lastIndex = pos;
    const m = re.exec(input);
    if (m === null) break;
    const end = m.index + m[0].length;
    let accept = true;
    if (end === pos) {
      // An empty match: not right after the previous match; move on by one character.
      if (m.index === prevMatchEnd) accept = false;
      pos += charWidth(input, pos) || 1;
    } else {
      pos = end;
    }
    prevMatchEnd = end;
    if (accept) {
      deliver(m);
      delivered++;
    }
  }
}

/** One piece of a parsed Go replacement template: literal text, a group number, or a group name. */
type TemplatePart = string | number | { name: string };

// Go's extract(): letters, digits and '_' (Unicode), as long as possible.
const NAME_CHAR = /^[\p{L}\p{Nd}_]$/u;

/** Parses a Go regexp.Expand template once: `$$` is `$`, a malformed reference is a literal `$`. */
export function parseGoTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let literal = '';
  let i = 0;
  for (;;) {
    const dollar = template.indexOf('$', i);
    if (dollar < 0) break;
    literal += template.slice(i, dollar);
    i = dollar + 1;
    if (template[i] === '$') {
      literal += '$';
      i++;
      continue;
    }
    const ref = extractRef(template, i);
    if (!ref) {
      literal += '$';
      continue;
    }
    if (literal) parts.push(literal);
    literal = '';
    parts.push(ref.part);
    i = ref.end;
  }
  literal += template.slice(i);
  if (literal) parts.push(literal);
  return parts;
}

// A reference after a '$' at `at`: `name` or `{name}`. Numbers (no leading zero, below 1e8) name groups by index:
// `$1x` is the group named "1x", `${1}x` group 1 then "x", `$01` the group named "01".
function extractRef(t: string, at: number): { part: TemplatePart; end: number } | null {
  let i = at;
  const brace = t[i] === '{';
  if (brace) i++;
  const start = i;
  while (i < t.length) {
    const ch = String.fromCodePoint(t.codePointAt(i) as number);
    if (!NAME_CHAR.test(ch)) break;
    i += ch.length;
  }
  if (i === start) return null;
  const name = t.slice(start, i);
  if (brace) {
    if (t[i] !== '}') return null;
    i++;
  }
  let num = 0;
  for (let k = 0; k < name.length; k++) {
    const c = name.charCodeAt(k);
    if (c < 48 || c > 57 || num >= 1e8) {
      num = -1;
      break;
    }
    num = num * 10 + (c - 48);
  }
  if (name[0] === '0' && name.length > 1) num = -1;
  return { part: num >= 0 ? num : { name }, end: i };
}

function part(p: TemplatePart, m: RegExpExecArray): string {
  if (typeof p === 'string') return p;
  return (typeof p === 'number' ? m[p] : m.groups?.[p.name]) ?? '';
}

function expandedLength(parts: readonly TemplatePart[], m: RegExpExecArray): number {
  let n = 0;
  for (const p of parts) n += part(p, m).length;
  return n;
}

// A group that does not exist or did not take part in the match expands to "".
function expand(parts: readonly TemplatePart[], m: RegExpExecArray): string {
  let out = '';
  for (const p of parts) out += part(p, m);
  return out;
}
