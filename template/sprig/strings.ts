import { FunctionError } from '../errors';
import { goQuote } from '../fmt';
import { def, FuncContext, FuncDef } from '../registry';
import { byteLength, byteSlice, GoValue, newMap } from '../values';
import { num, strval } from './convert';

const s = (v: GoValue): string => v as string;
const WS = /[\s\u0085\u00a0]/u;

function goTitle(str: string): string {
  let prev = ' ';
  let out = '';
  for (const ch of str) {
    const sep = /[A-Za-z0-9_]/.test(prev) ? false : prev.charCodeAt(0) < 0x80 ? true : WS.test(prev);
    out += sep ? ch.toUpperCase() : ch;
    prev = ch;
  }
  return out;
}

function untitle(str: string): string {
  let inWord = false;
  let out = '';
  for (const ch of str) {
    if (WS.test(ch)) {
      inWord = false;
      out += ch;
    } else {
      out += inWord ? ch : ch.toLowerCase();
      inWord = true;
    }
  }
  return out;
}

function trimSet(str: string, cutset: string, left: boolean, right: boolean): string {
  const set = new Set([...cutset]);
  const chars = [...str];
  let a = 0;
  let b = chars.length;
  if (left) while (a < b && set.has(chars[a])) a++;
  if (right) while (b > a && set.has(chars[b - 1])) b--;
  return chars.slice(a, b).join('');
}

// Splits identifiers into words at separators and case changes ("HTTPServer" -> HTTP, Server).
function words(str: string): string[] {
  return str
    .split(/[\s_\-.]+/)
    .flatMap((part) =>
      part
        .replace(/([a-z0-9])([A-Z])/g, '$1\u0000$2')
        .replace(/([A-Z]+)([A-Z][a-z])/g, '$1\u0000$2')
        .split('\u0000'),
    )
    .filter((w) => w.length > 0);
}

function camel(str: string): string {
  const lead = str.startsWith('_') ? '_' : '';
  const trail = str.endsWith('_') && str.length > 1 ? '_' : '';
  const body = str
    .split(/[_\s]+/)
    .filter((w) => w)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
  return lead + body + trail;
}

function swapcase(str: string): string {
  let out = '';
  for (const ch of str) {
    const up = ch.toUpperCase();
    const low = ch.toLowerCase();
    out += ch === up && ch !== low ? low : ch === low && ch !== up ? up : ch;
  }
  return out;
}

// goutils.WrapCustom(str, width, "\n", false): break at spaces, never inside a word.
function wrap(str: string, width: number): string {
  if (width < 1) width = 1;
  const chars = [...str];
  let offset = 0;
  let out = '';
  while (chars.length - offset > width) {
    if (chars[offset] === ' ') {
      offset++;
      continue;
    }
    let space = -1;
    for (let k = offset + width; k >= offset; k--) {
      if (chars[k] === ' ') {
        space = k;
        break;
      }
    }
    if (space >= offset) {
      out += chars.slice(offset, space).join('') + '\n';
      offset = space + 1;
    } else {
      let k = offset + width;
      while (k < chars.length && chars[k] !== ' ') k++;
      if (k < chars.length) {
        out += chars.slice(offset, k).join('') + '\n';
        offset = k + 1;
      } else {
        out += chars.slice(offset).join('');
        offset = chars.length;
      }
    }
  }
  return out + chars.slice(offset).join('');
}

/** Refuses to build a string longer than the template limit. */
export function tooLong(ctx: FuncContext, fn: string, size: number): void {
  if (size > ctx.maxString) throw new FunctionError(`${fn} result longer than ${ctx.maxString} bytes`);
}

function indent(ctx: FuncContext, n: number, v: string): string {
  const lines = v.split('\n');
  const width = Math.max(0, n);
  tooLong(ctx, 'indent', v.length + lines.length * width);
  const pad = ' '.repeat(width);
  return pad + lines.join('\n' + pad);
}

function goReplace(src: string, old: string, nw: string): string {
  if (old === '') return src === '' ? nw : nw + [...src].join(nw) + nw;
  return src.split(old).join(nw);
}

function splitMap(parts: string[]): GoValue {
  const m = newMap();
  parts.forEach((p, i) => (m[`_${i}`] = p));
  return m;
}

// strings.SplitN semantics: n<0 all, n==0 none, n>0 at most n parts.
function splitN(str: string, sep: string, n: number): string[] {
  if (n === 0) return [];
  const all = sep === '' ? [...str] : str.split(sep);
  if (n < 0 || all.length <= n) return all;
  return [...all.slice(0, n - 1), all.slice(n - 1).join(sep)];
}

/** Sprig's string functions. */
export const STRING_FUNCTIONS: Record<string, FuncDef> = {
  trim: def(['string'], (_c, v) => s(v).replace(/^[\s\u0085]+|[\s\u0085]+$/gu, '')),
  trimAll: def(['string', 'string'], (_c, cut, v) => trimSet(s(v), s(cut), true, true)),
  trimall: def(['string', 'string'], (_c, cut, v) => trimSet(s(v), s(cut), true, true)),
  trimPrefix: def(['string', 'string'], (_c, p, v) =>
    s(v).startsWith(s(p)) ? s(v).slice(s(p).length) : s(v),
  ),
  trimSuffix: def(['string', 'string'], (_c, p, v) =>
    s(p) !== '' && s(v).endsWith(s(p)) ? s(v).slice(0, s(v).length - s(p).length) : s(v),
  ),
  upper: def(['string'], (_c, v) => s(v).toUpperCase()),
  lower: def(['string'], (_c, v) => s(v).toLowerCase()),
  title: def(['string'], (_c, v) => goTitle(s(v))),
  untitle: def(['string'], (_c, v) => untitle(s(v))),
  repeat: def(['int', 'string'], (ctx, count, v) => {
    const n = num(count);
    if (n < 0) throw new FunctionError('strings: negative Repeat count');
    if (n * s(v).length > ctx.maxString)
      throw new FunctionError(`repeat result longer than ${ctx.maxString} bytes`);
    ctx.charge((n * s(v).length) >> 6);
    return s(v).repeat(n);
  }),
  substr: def(['int', 'int', 'string'], (_c, start, end, v) => {
    const a = num(start);
    const b = num(end);
    const len = byteLength(s(v));
    if (a < 0) {
      if (b > len || b < 0) throw new FunctionError(`slice bounds out of range [:${b}] with length ${len}`);
      return byteSlice(s(v), 0, b);
    }
    if (b < 0 || b > len) {
      if (a > len) throw new FunctionError(`slice bounds out of range [${a}:${len}]`);
      return byteSlice(s(v), a);
    }
    if (a > b) throw new FunctionError(`slice bounds out of range [${a}:${b}]`);
    return byteSlice(s(v), a, b);
  }),
  nospace: def(['string'], (_c, v) => s(v).replace(/[\s\u0085]/gu, '')),
  trunc: def(['int', 'string'], (_c, c, v) => {
    const n = num(c);
    const len = byteLength(s(v));
    if (n < 0 && len + n > 0) return byteSlice(s(v), len + n);
    if (n >= 0 && len > n) return byteSlice(s(v), 0, n);
    return s(v);
  }),
  abbrev: def(['int', 'string'], (_c, w, v) => {
    const width = num(w);
    if (width < 4 || byteLength(s(v)) <= width) return s(v);
    return byteSlice(s(v), 0, width - 3) + '...';
  }),
  initials: def(['string'], (_c, v) =>
    s(v)
      .split(/[\s\u0085]+/u)
      .filter((w) => w)
      .map((w) => [...w][0])
      .join(''),
  ),
  contains: def(['string', 'string'], (_c, sub, v) => s(v).includes(s(sub))),
  hasPrefix: def(['string', 'string'], (_c, p, v) => s(v).startsWith(s(p))),
  hasSuffix: def(['string', 'string'], (_c, p, v) => s(v).endsWith(s(p))),
  quote: def(
    [],
    (_c, ...vs) =>
      vs
        .filter((x) => x !== null && x !== undefined)
        .map((x) => goQuote(strval(x)))
        .join(' '),
    'any',
  ),
  squote: def(
    [],
    (_c, ...vs) =>
      vs
        .filter((x) => x !== null && x !== undefined)
        .map((x) => `'${strval(x)}'`)
        .join(' '),
    'any',
  ),
  cat: def(
    [],
    (_c, ...vs) =>
      vs
        .filter((x) => x !== null && x !== undefined)
        .map(strval)
        .join(' '),
    'any',
  ),
  indent: def(['int', 'string'], (ctx, n, v) => indent(ctx, num(n), s(v))),
  nindent: def(['int', 'string'], (ctx, n, v) => '\n' + indent(ctx, num(n), s(v))),
  replace: def(['string', 'string', 'string'], (ctx, old, nw, src) => {
    const count = s(old) === '' ? [...s(src)].length + 1 : s(src).split(s(old)).length - 1;
    tooLong(ctx, 'replace', s(src).length + count * Math.max(0, s(nw).length - s(old).length));
    return goReplace(s(src), s(old), s(nw));
  }),
  plural: def(['string', 'string', 'int'], (_c, one, many, n) => (num(n) === 1 ? s(one) : s(many))),
  snakecase: def(['string'], (_c, v) =>
    words(s(v))
      .map((w) => w.toLowerCase())
      .join('_'),
  ),
  kebabcase: def(['string'], (_c, v) =>
    words(s(v))
      .map((w) => w.toLowerCase())
      .join('-'),
  ),
  camelcase: def(['string'], (_c, v) => camel(s(v))),
  swapcase: def(['string'], (_c, v) => swapcase(s(v))),
  wrap: def(['int', 'string'], (_c, w, v) => wrap(s(v), num(w))),
  wrapWith: def(['int', 'string', 'string'], (ctx, w, sep, v) => {
    const lines = wrap(s(v), num(w)).split('\n');
    tooLong(ctx, 'wrapWith', s(v).length + lines.length * s(sep).length);
    return lines.join(s(sep));
  }),
  shuffle: def(['string'], (_c, v) => {
    const chars = [...s(v)];
    for (let i = chars.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [chars[i], chars[j]] = [chars[j], chars[i]];
    }
    return chars.join('');
  }),
  toString: def(['any'], (_c, v) => strval(v)),
  split: def(['string', 'string'], (_c, sep, v) => splitMap(splitN(s(v), s(sep), -1))),
  splitList: def(['string', 'string'], (_c, sep, v) => splitN(s(v), s(sep), -1)),
  splitn: def(['string', 'int', 'string'], (_c, sep, n, v) => splitMap(splitN(s(v), s(sep), num(n)))),
  // Sprig reads no environment here: templates must not see the operator's secrets.
  env: def(['string'], () => ''),
  expandenv: def(['string'], (_c, v) => s(v).replace(/\$(\{[^}]*\}|[A-Za-z0-9_]+)/g, '')),
};
