import { JsonPathSyntaxError } from './errors';

export type TokenType = 'punct' | 'op' | 'ident' | 'number' | 'string' | 'eof';

/** One lexical token; `column` is 1-based. */
export interface Token {
  readonly type: TokenType;
  /** Punctuation/operator text, identifier name, or the unescaped string value. */
  readonly text: string;
  readonly number?: number;
  readonly column: number;
}

// Longest first so `..` wins over `.`, `==` over `=`.
const SYMBOLS = [
  '..',
  '==',
  '!=',
  '<=',
  '>=',
  '=~',
  '!~',
  '&&',
  '||',
  '$',
  '@',
  '.',
  '[',
  ']',
  '(',
  ')',
  ',',
  ':',
  '?',
  '*',
  '<',
  '>',
  '!',
  '+',
  '-',
  '/',
  '%',
];
const PUNCT = new Set(['$', '@', '.', '..', '[', ']', '(', ')', ',', ':', '?']);
const IDENT = /[\p{L}_][\p{L}\p{Nd}_]*/uy;
const NUMBER = /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  b: '\b',
  f: '\f',
  v: '\v',
  a: '\x07',
  '0': '\0',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '/': '/',
};

/** Describes a token for error messages. */
export function describe(t: Token): string {
  if (t.type === 'eof') return 'end of input';
  if (t.type === 'string') return `string ${JSON.stringify(t.text)}`;
  if (t.type === 'number') return `number ${t.text}`;
  if (t.type === 'ident') return `'${t.text}'`;
  return `'${t.text}'`;
}

/** Splits a select into tokens; throws JsonPathSyntaxError on a character that starts no token. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = source.length;
  while (i < n) {
    const c = source[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const column = i + 1;
    if (c === '"' || c === "'" || c === '`') {
      const [text, next] = readString(source, i);
      tokens.push({ type: 'string', text, column });
      i = next;
      continue;
    }
    if (c >= '0' && c <= '9') {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(source) as RegExpExecArray;
      tokens.push({ type: 'number', text: m[0], number: Number(m[0]), column });
      i += m[0].length;
      continue;
    }
    IDENT.lastIndex = i;
    const id = IDENT.exec(source);
    if (id) {
      tokens.push({ type: 'ident', text: id[0], column });
      i += id[0].length;
      continue;
    }
    const sym = SYMBOLS.find((s) => source.startsWith(s, i));
    if (!sym) {
      throw new JsonPathSyntaxError(
        column,
        'a path, value or operator',
        `'${String.fromCodePoint(source.codePointAt(i) ?? 0)}'`,
      );
    }
    tokens.push({ type: PUNCT.has(sym) ? 'punct' : 'op', text: sym, column });
    i += sym.length;
  }
  tokens.push({ type: 'eof', text: '', column: n + 1 });
  return tokens;
}

function readString(source: string, start: number): [string, number] {
  const quote = source[start];
  let out = '';
  let i = start + 1;
  while (i < source.length) {
    const c = source[i];
    if (c === quote) return [out, i + 1];
    if (c === '\\' && quote !== '`') {
      const e = source[i + 1];
      if (e === undefined) break;
      if (e in SIMPLE_ESCAPES) {
        out += SIMPLE_ESCAPES[e];
        i += 2;
        continue;
      }
      const width = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
      const hex = source.slice(i + 2, i + 2 + width);
      const code = width && /^[0-9a-fA-F]+$/.test(hex) && hex.length === width ? parseInt(hex, 16) : -1;
      if (code < 0 || code > 0x10ffff) {
        throw new JsonPathSyntaxError(i + 1, 'a valid escape sequence', `'\\${e}'`);
      }
      out += String.fromCodePoint(code);
      i += 2 + width;
      continue;
    }
    out += c;
    i++;
  }
  throw new JsonPathSyntaxError(source.length + 1, `closing ${quote}`, 'end of input');
}
