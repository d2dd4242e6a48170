import { NumberNode } from './ast';
import { Token } from './lexer';

// Go literals as text/template reads them: quoted and raw strings, characters, and numbers.

/** Reports a syntax error at a token (never returns). */
export type Fail = (msg: string, t: Token) => never;

/** Decodes a Go string, raw string or char literal. */
export function unquote(t: Token, fail: Fail): string {
  const s = t.value;
  if (t.type === 'rawString') return s.slice(1, -1).replace(/\r/g, '');
  const body = s.slice(1, -1);
  let out = '';
  for (let k = 0; k < body.length; k++) {
    const c = body[k];
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++k];
    const simple: Record<string, string> = {
      a: '\x07',
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '\\': '\\',
      '"': '"',
      "'": "'",
    };
    if (e in simple && (e !== "'" || t.type === 'char') && (e !== '"' || t.type === 'string')) {
      out += simple[e];
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(k + 1, k + 1 + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) fail(`invalid syntax in ${s}`, t);
      const cp = parseInt(hex, 16);
      if (cp > 0x10ffff) fail(`invalid syntax in ${s}`, t);
      out += String.fromCodePoint(cp);
      k += n;
    } else if (e >= '0' && e <= '7') {
      const oct = body.slice(k, k + 3);
      if (!/^[0-7]{3}$/.test(oct)) fail(`invalid syntax in ${s}`, t);
      out += String.fromCharCode(parseInt(oct, 8));
      k += 2;
    } else {
      fail(`invalid syntax in ${s}`, t);
    }
  }
  return out;
}

/** Go's NumberNode: a constant that may be usable as int, float or both. */
export function parseNumber(t: Token, fail: Fail): NumberNode {
  const base = { type: 'number' as const, pos: t.pos, text: t.value };
  if (t.type === 'char') {
    const s = unquote(t, fail);
    const cp = s.codePointAt(0);
    if (cp === undefined || [...s].length !== 1) fail(`malformed character constant: ${t.value}`, t);
    return {
      ...base,
      isInt: true,
      isFloat: true,
      int: BigInt(cp as number),
      float: cp as number,
      floatTyped: false,
    };
  }
  const text = t.value.replace(/_/g, '');
  const neg = text.startsWith('-');
  const unsigned = text.replace(/^[+-]/, '');
  let int: bigint | null = null;
  let float: number;
  if (/^0[xX][0-9a-fA-F]+$/.test(unsigned) || /^0[oObB][0-7]+$/.test(unsigned) || /^[0-9]+$/.test(unsigned)) {
    // Go treats a leading 0 as octal ("0755").
    const lit = /^0[0-7]+$/.test(unsigned) ? `0o${unsigned.slice(1)}` : unsigned;
    int = BigInt(lit);
    if (neg) int = -int;
    float = Number(int);
  } else {
    float = Number(unsigned);
    if (Number.isNaN(float)) fail(`illegal number syntax: ${JSON.stringify(t.value)}`, t);
    if (neg) float = -float;
    if (Number.isInteger(float) && Math.abs(float) < 2 ** 63) int = BigInt(float);
  }
  const inInt64 = int !== null && int >= -(2n ** 63n) && int < 2n ** 63n;
  const isHexInt = /^0[xX]/.test(unsigned) && !/[pP.]/.test(unsigned);
  return {
    ...base,
    isInt: inInt64,
    isFloat: Number.isFinite(float),
    int: inInt64 ? (int as bigint) : 0n,
    float,
    floatTyped: !isHexInt && /[.eEpP]/.test(unsigned),
  };
}
