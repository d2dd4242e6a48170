import { Pos } from './ast';
import { TemplateSyntaxError } from './errors';

/** Kinds of tokens produced by the lexer. */
export type TokenType =
  | 'text'
  | 'leftDelim'
  | 'rightDelim'
  | 'space'
  | 'pipe'
  | 'leftParen'
  | 'rightParen'
  | 'comma'
  | 'declare'
  | 'assign'
  | 'string'
  | 'rawString'
  | 'char'
  | 'number'
  | 'field'
  | 'variable'
  | 'identifier'
  | 'keyword'
  | 'bool'
  | 'nil'
  | 'dot'
  | 'eof';

/** One lexical token with its 1-based position and byte offset. */
export interface Token {
  type: TokenType;
  value: string;
  pos: Pos;
  offset: number;
}

const KEYWORDS = new Set([
  'block',
  'break',
  'continue',
  'define',
  'else',
  'end',
  'if',
  'range',
  'template',
  'with',
]);
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isAlnum = (c: string): boolean => c === '_' || /[\p{L}\p{Nd}]/u.test(c);
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** The single-character tokens that need no look-ahead (parentheses count depth, so they are apart). */
const PUNCTUATION: ReadonlyMap<string, TokenType> = new Map<string, TokenType>([
  ['=', 'assign'],
  ['|', 'pipe'],
  [',', 'comma'],
]);

/** Splits a template into tokens following Go's text/template lexer (delimiters `{{ }}`, trim markers, comments). */
export function lex(input: string, name = 'template'): Token[] {
  return new Lexer(input, name).run();
}

/** One lexing run: the input, the tokens so far, and whether the next text loses its leading spaces. */
class Lexer {
  private readonly tokens: Token[] = [];
  // Line starts let us turn an offset into line:column lazily.
  private readonly lineStarts = [0];
  private trimNextText = false;

  constructor(
    private readonly input: string,
    private readonly name: string,
  ) {
    for (let i = 0; i < input.length; i++) if (input.charCodeAt(i) === 10) this.lineStarts.push(i + 1);
  }

  run(): Token[] {
    const input = this.input;
    let pos = 0;
    while (pos <= input.length) {
      const open = input.indexOf('{{', pos);
      let textEnd = open < 0 ? input.length : open;
      const leftTrim = open >= 0 && input[open + 2] === '-' && isSpace(input[open + 3] ?? '');
      let textStart = pos;
      if (this.trimNextText) while (textStart < textEnd && isSpace(input[textStart])) textStart++;
      if (leftTrim) while (textEnd > textStart && isSpace(input[textEnd - 1])) textEnd--;
      if (textEnd > textStart) this.emit('text', input.slice(textStart, textEnd), textStart);
      this.trimNextText = false;
      if (open < 0) break;
      pos = open + 2 + (leftTrim ? 2 : 0);
      if (input.startsWith('/*', pos)) {
        pos = this.comment(pos, open);
        continue;
      }
      this.emit('leftDelim', '{{', open);
      pos = this.action(pos, open);
    }
    this.emit('eof', '', input.length);
    return this.tokens;
  }

  private posAt(offset: number): Pos {
    const lineStarts = this.lineStarts;
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: offset - lineStarts[lo] + 1 };
  }

  private fail(msg: string, offset: number): never {
    const p = this.posAt(offset);
    throw new TemplateSyntaxError(msg, p.line, p.col, this.name);
  }

  private emit(type: TokenType, value: string, offset: number): void {
    this.tokens.push({ type, value, pos: this.posAt(offset), offset });
  }

  /** A comment `{{/* ... *\/}}` (`pos` at its `/*`), optionally with a right trim marker; the offset after it. */
  private comment(pos: number, open: number): number {
    const input = this.input;
    const close = input.indexOf('*/', pos + 2);
    if (close < 0) this.fail('unclosed comment', open);
    const after = close + 2;
    if (input[after] === ' ' && input[after + 1] === '-' && input.startsWith('}}', after + 2)) {
      this.trimNextText = true;
      return after + 4;
    }
    if (input.startsWith('}}', after)) return after + 2;
    return this.fail('comment ends before closing delimiter', close);
  }

  /** Lexes one action body; returns the offset after its closing delimiter. */
  private action(start: number, open: number): number {
    const input = this.input;
    let p = start;
    let parenDepth = 0;
    for (;;) {
      if (p >= input.length) this.fail('unclosed action', open);
      const c = input[p];
      // Right delimiter, with optional trim marker.
      const trimmed = isSpace(c) && this.trimMarkerAt(p);
      if (trimmed || input.startsWith('}}', p)) {
        if (parenDepth > 0) this.fail('unclosed left paren', p);
        this.emit('rightDelim', '}}', p);
        if (!trimmed) return p + 2;
        this.trimNextText = true;
        return p + 4;
      }
      if (c === '(') {
        parenDepth++;
        this.emit('leftParen', '(', p);
        p++;
      } else if (c === ')') {
        parenDepth--;
        if (parenDepth < 0) this.fail('unexpected right paren', p);
        this.emit('rightParen', ')', p);
        p++;
      } else {
        p = this.token(p, c);
      }
    }
  }

  /** One token of an action other than a delimiter or a parenthesis, at `p` (whose character is `c`); its end. */
  private token(p: number, c: string): number {
    const punctuation = PUNCTUATION.get(c);
    if (punctuation) {
      this.emit(punctuation, c, p);
      return p + 1;
    }
    if (isSpace(c)) return this.spaces(p);
    switch (c) {
      case ':':
        if (this.input[p + 1] !== '=') this.fail('expected :=', p);
        this.emit('declare', ':=', p);
        return p + 2;
      case '"':
        return this.quoted(p, 'string', 'unterminated quoted string');
      case "'":
        return this.quoted(p, 'char', 'unterminated character constant');
      case '`':
        return this.rawString(p);
      case '$':
        return this.word(p, p + 1, 'variable');
      case '.':
        // A number like .5, a field .Name, or the cursor itself.
        return isDigit(this.input[p + 1]) ? this.number(p) : this.word(p, p + 1, 'field');
    }
    if (c === '+' || c === '-' || isDigit(c)) return this.number(p);
    if (isAlnum(c)) return this.word(p, p, 'identifier');
    return this.fail(`unexpected ${JSON.stringify(c)} in command`, p);
  }

  /** A run of spaces, which ends before the space that starts a ` -}}` trim marker. */
  private spaces(p: number): number {
    const input = this.input;
    let e = p;
    while (e < input.length && isSpace(input[e]) && !this.trimMarkerAt(e)) e++;
    this.emit('space', input.slice(p, e), p);
    return e;
  }

  /** A string or character constant (its quote at `p`), with backslash escapes, on one line. */
  private quoted(p: number, type: 'string' | 'char', unterminated: string): number {
    const input = this.input;
    const quote = input[p];
    let e = p + 1;
    for (;;) {
      if (e >= input.length || input[e] === '\n') this.fail(unterminated, p);
      if (input[e] === '\\') e += 2;
      else if (input[e] === quote) break;
      else e++;
    }
    this.emit(type, input.slice(p, e + 1), p);
    return e + 1;
  }

  private rawString(p: number): number {
    const e = this.input.indexOf('`', p + 1);
    if (e < 0) this.fail('unterminated raw quoted string', p);
    this.emit('rawString', this.input.slice(p, e + 1), p);
    return e + 1;
  }

  /**
   * A word from `p` whose letters start at `from`: `$x` a variable; `.Name` a field (a lone `.` the cursor); a bare
   * word a keyword, bool, nil or identifier.
   */
  private word(p: number, from: number, type: 'variable' | 'field' | 'identifier'): number {
    const input = this.input;
    let e = from;
    while (e < input.length && isAlnum(input[e])) e++;
    const word = input.slice(p, e);
    if (type === 'field' && e === from) this.emit('dot', '.', p);
    else if (type !== 'identifier') this.emit(type, word, p);
    else if (KEYWORDS.has(word)) this.emit('keyword', word, p);
    else if (word === 'true' || word === 'false') this.emit('bool', word, p);
    else if (word === 'nil') this.emit('nil', word, p);
    else this.emit('identifier', word, p);
    return e;
  }

  // True at a space that starts a right trim marker ` -}}`.
  private trimMarkerAt(p: number): boolean {
    const input = this.input;
    return isSpace(input[p]) && input[p + 1] === '-' && input.startsWith('}}', p + 2);
  }

  /** A number: sign, base prefix, digits, fraction, exponent (`e` for decimals, `p` for hexadecimals), as Go's. */
  private number(p: number): number {
    const input = this.input;
    let e = p;
    if (input[e] === '+' || input[e] === '-') e++;
    const digits = digitsOf(input, e);
    if (digits !== DECIMAL) e += 2;
    const digitsStart = e;
    while (e < input.length && digits.includes(input[e])) e++;
    if (e === digitsStart && input[e] !== '.')
      this.fail(`bad number syntax: ${JSON.stringify(input.slice(p, e + 1))}`, p);
    if (input[e] === '.') {
      e++;
      while (e < input.length && digits.includes(input[e])) e++;
    }
    e = exponentEnd(input, e, digits);
    if (e < input.length && (isAlnum(input[e]) || input[e] === '.')) {
      this.fail(`bad number syntax: ${JSON.stringify(input.slice(p, e + 1))}`, p);
    }
    this.emit('number', input.slice(p, e), p);
    return e;
  }
}

const DECIMAL = '0123456789_';

/** The digits of a number whose digits (or base prefix `0x`, `0o`, `0b`) start at `e`. */
function digitsOf(input: string, e: number): string {
  if (input[e] !== '0' || !/[xXoObB]/.test(input[e + 1] ?? '')) return DECIMAL;
  const b = input[e + 1].toLowerCase();
  return b === 'x' ? '0123456789abcdefABCDEF_' : b === 'o' ? '01234567_' : '01_';
}

/** The end of the exponent at `e`, if any: `e` for decimals, `p` for hexadecimals. */
function exponentEnd(input: string, e: number, digits: string): number {
  const exponent = digits === DECIMAL ? /[eE]/ : digits.length > DECIMAL.length ? /[pP]/ : undefined;
  if (!exponent || !exponent.test(input[e] ?? '')) return e;
  e++;
  if (input[e] === '+' || input[e] === '-') e++;
  while (e < input.length && /[0-9_]/.test(input[e])) e++;
  return e;
}
