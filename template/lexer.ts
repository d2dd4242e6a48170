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

/** Splits a template into tokens following Go's text/template lexer (delimiters `{{ }}`, trim markers, comments). */
export function lex(input: string, name = 'template'): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  // Line starts let us turn an offset into line:column lazily.
  const lineStarts = [0];
  for (let i = 0; i < input.length; i++) if (input.charCodeAt(i) === 10) lineStarts.push(i + 1);
  const posAt = (offset: number): Pos => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: offset - lineStarts[lo] + 1 };
  };
  const fail = (msg: string, offset: number): never => {
    const p = posAt(offset);
    throw new TemplateSyntaxError(msg, p.line, p.col, name);
  };
  const emit = (type: TokenType, value: string, offset: number): void => {
    tokens.push({ type, value, pos: posAt(offset), offset });
  };
  let trimNextText = false;

  while (pos <= input.length) {
    const open = input.indexOf('{{', pos);
    let textEnd = open < 0 ? input.length : open;
    const leftTrim = open >= 0 && input[open + 2] === '-' && isSpace(input[open + 3] ?? '');
    let textStart = pos;
    if (trimNextText) while (textStart < textEnd && isSpace(input[textStart])) textStart++;
    if (leftTrim) while (textEnd > textStart && isSpace(input[textEnd - 1])) textEnd--;
    if (textEnd > textStart) emit('text', input.slice(textStart, textEnd), textStart);
    trimNextText = false;
    if (open < 0) break;
    pos = open + 2 + (leftTrim ? 2 : 0);
    // Comments: `{{/* ... */}}`, optionally with trim markers.
    if (input.startsWith('/*', pos)) {
      const close = input.indexOf('*/', pos + 2);
      if (close < 0) fail('unclosed comment', open);
      let after = close + 2;
      if (input[after] === ' ' && input[after + 1] === '-' && input.startsWith('}}', after + 2)) {
        trimNextText = true;
        after += 4;
      } else if (input.startsWith('}}', after)) {
        after += 2;
      } else {
        fail('comment ends before closing delimiter', close);
      }
      pos = after;
      continue;
    }
    emit('leftDelim', '{{', open);
    pos = lexInsideAction(pos, open);
  }
  emit('eof', '', input.length);
  return tokens;

  // Lexes one action body; returns the offset after its closing delimiter.
  function lexInsideAction(start: number, open: number): number {
    let p = start;
    let parenDepth = 0;
    for (;;) {
      if (p >= input.length) fail('unclosed action', open);
      const c = input[p];
      // Right delimiter, with optional trim marker.
      if (isSpace(c)) {
        if (trimMarkerAt(p)) {
          if (parenDepth > 0) fail('unclosed left paren', p);
          emit('rightDelim', '}}', p);
          trimNextText = true;
          return p + 4;
        }
        let e = p;
        // A run of spaces ends before the space that starts a ` -}}` trim marker.
        while (e < input.length && isSpace(input[e]) && !trimMarkerAt(e)) e++;
        emit('space', input.slice(p, e), p);
        p = e;
        continue;
      }
      if (input.startsWith('}}', p)) {
        if (parenDepth > 0) fail('unclosed left paren', p);
        emit('rightDelim', '}}', p);
        return p + 2;
      }
      if (c === '=') {
        emit('assign', '=', p);
        p++;
      } else if (c === ':') {
        if (input[p + 1] !== '=') fail('expected :=', p);
        emit('declare', ':=', p);
        p += 2;
      } else if (c === '|') {
        emit('pipe', '|', p);
        p++;
      } else if (c === ',') {
        emit('comma', ',', p);
        p++;
      } else if (c === '(') {
        parenDepth++;
        emit('leftParen', '(', p);
        p++;
      } else if (c === ')') {
        parenDepth--;
        if (parenDepth < 0) fail('unexpected right paren', p);
        emit('rightParen', ')', p);
        p++;
      } else if (c === '"') {
        let e = p + 1;
        for (;;) {
          if (e >= input.length || input[e] === '\n') fail('unterminated quoted string', p);
          if (input[e] === '\\') e += 2;
          else if (input[e] === '"') break;
          else e++;
        }
        emit('string', input.slice(p, e + 1), p);
        p = e + 1;
      } else if (c === '`') {
        const e = input.indexOf('`', p + 1);
        if (e < 0) fail('unterminated raw quoted string', p);
        emit('rawString', input.slice(p, e + 1), p);
        p = e + 1;
      } else if (c === "'") {
        let e = p + 1;
        for (;;) {
          if (e >= input.length || input[e] === '\n') fail('unterminated character constant', p);
          if (input[e] === '\\') e += 2;
          else if (input[e] === "'") break;
          else e++;
        }
        emit('char', input.slice(p, e + 1), p);
        p = e + 1;
      } else if (c === '$') {
        let e = p + 1;
        while (e < input.length && isAlnum(input[e])) e++;
        emit('variable', input.slice(p, e), p);
        p = e;
      } else if (c === '.') {
        // A number like .5, a field .Name, or the cursor itself.
        if (p + 1 < input.length && input[p + 1] >= '0' && input[p + 1] <= '9') {
          p = lexNumber(p);
          continue;
        }
        let e = p + 1;
        while (e < input.length && isAlnum(input[e])) e++;
        if (e === p + 1) emit('dot', '.', p);
        else emit('field', input.slice(p, e), p);
        p = e;
      } else if (c === '+' || c === '-' || (c >= '0' && c <= '9')) {
        p = lexNumber(p);
      } else if (isAlnum(c)) {
        let e = p;
        while (e < input.length && isAlnum(input[e])) e++;
        const word = input.slice(p, e);
        if (KEYWORDS.has(word)) emit('keyword', word, p);
        else if (word === 'true' || word === 'false') emit('bool', word, p);
        else if (word === 'nil') emit('nil', word, p);
        else emit('identifier', word, p);
        p = e;
      } else {
        fail(`unexpected ${JSON.stringify(c)} in command`, p);
      }
    }
  }

  // True at a space that starts a right trim marker ` -}}`.
  function trimMarkerAt(p: number): boolean {
    return isSpace(input[p]) && input[p + 1] === '-' && input.startsWith('}}', p + 2);
  }

  function lexNumber(p: number): number {
    let e = p;
    if (input[e] === '+' || input[e] === '-') e++;
    let digits = '0123456789_';
    if (input[e] === '0' && /[xXoObB]/.test(input[e + 1] ?? '')) {
      const b = input[e + 1].toLowerCase();
      digits = b === 'x' ? '0123456789abcdefABCDEF_' : b === 'o' ? '01234567_' : '01_';
      e += 2;
    }
    const digitsStart = e;
    while (e < input.length && digits.includes(input[e])) e++;
    if (e === digitsStart && input[e] !== '.')
      fail(`bad number syntax: ${JSON.stringify(input.slice(p, e + 1))}`, p);
    if (input[e] === '.') {
      e++;
      while (e < input.length && digits.includes(input[e])) e++;
    }
    if (digits.length === 11 && /[eE]/.test(input[e] ?? '')) {
      e++;
      if (input[e] === '+' || input[e] === '-') e++;
      while (e < input.length && /[0-9_]/.test(input[e])) e++;
    } else if (digits.length > 11 && /[pP]/.test(input[e] ?? '')) {
      e++;
      if (input[e] === '+' || input[e] === '-') e++;
      while (e < input.length && /[0-9_]/.test(input[e])) e++;
    }
    if (e < input.length && (isAlnum(input[e]) || input[e] === '.')) {
      fail(`bad number syntax: ${JSON.stringify(input.slice(p, e + 1))}`, p);
    }
    emit('number', input.slice(p, e), p);
    return e;
  }
}
