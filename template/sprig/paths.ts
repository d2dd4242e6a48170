import { randomBytes, randomInt } from 'node:crypto';
import { FunctionError } from '../errors';
import { def, FuncContext, FuncDef } from '../registry';
import { GoValue } from '../values';
import { num } from './convert';

// Sprig's path functions are Go's `path` package (slash-separated); the `os*` variants use `path/filepath`,
// which is the same on Linux, where KubeMod runs. Sprig's random strings come from crypto/rand.

const s = (v: GoValue): string => v as string;

/** Go's path.Clean: the shortest equivalent path (no `.`, resolved `..`, single slashes); "" becomes ".". */
export function cleanPath(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  if (rooted) return `/${joined}`;
  return joined === '' ? '.' : joined;
}

/** Go's path.Base: the last element, trailing slashes dropped; "" gives ".", only slashes give "/". */
export function basePath(p: string): string {
  if (p === '') return '.';
  const trimmed = p.replace(/\/+$/, '');
  if (trimmed === '') return '/';
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

/** Go's path.Dir: everything up to the last slash, cleaned. */
export function dirPath(p: string): string {
  return cleanPath(p.slice(0, p.lastIndexOf('/') + 1));
}

/** Go's path.Ext: from the last dot of the last element, or "". */
export function extPath(p: string): string {
  for (let i = p.length - 1; i >= 0 && p[i] !== '/'; i--) if (p[i] === '.') return p.slice(i);
  return '';
}

const ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const DIGITS = '0123456789';

function randomFrom(ctx: FuncContext, count: GoValue, chars: string): string {
  const n = num(count);
  if (n < 0) throw new FunctionError(`negative length ${n}`);
  if (n > ctx.maxString) throw new FunctionError(`random string longer than ${ctx.maxString} bytes`);
  ctx.charge(n >> 6);
  let out = '';
  for (let i = 0; i < n; i++) out += chars[randomInt(chars.length)];
  return out;
}

const ASCII = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');

export const PATH_FUNCTIONS: Record<string, FuncDef> = {
  base: def(['string'], (_c, v) => basePath(s(v))),
  dir: def(['string'], (_c, v) => dirPath(s(v))),
  clean: def(['string'], (_c, v) => cleanPath(s(v))),
  ext: def(['string'], (_c, v) => extPath(s(v))),
  isAbs: def(['string'], (_c, v) => s(v).startsWith('/')),
  osBase: def(['string'], (_c, v) => basePath(s(v))),
  osDir: def(['string'], (_c, v) => dirPath(s(v))),
  osClean: def(['string'], (_c, v) => cleanPath(s(v))),
  osExt: def(['string'], (_c, v) => extPath(s(v))),
  osIsAbs: def(['string'], (_c, v) => s(v).startsWith('/')),
  randAlphaNum: def(['int'], (ctx, n) => randomFrom(ctx, n, ALPHA + DIGITS)),
  randAlpha: def(['int'], (ctx, n) => randomFrom(ctx, n, ALPHA)),
  randNumeric: def(['int'], (ctx, n) => randomFrom(ctx, n, DIGITS)),
  randAscii: def(['int'], (ctx, n) => randomFrom(ctx, n, ASCII)),
  randInt: def(['int', 'int'], (_c, min, max) => {
    const lo = num(min);
    const hi = num(max);
    // Go's rand.Intn panics for n <= 0; Sprig's randInt is rand.Intn(max-min) + min.
    if (hi <= lo) throw new FunctionError('invalid argument to Intn');
    return BigInt(lo + randomInt(hi - lo));
  }),
  randBytes: def(['int'], (ctx, n) => {
    const count = num(n);
    if (count < 0 || count > ctx.maxString) throw new FunctionError(`invalid length ${count}`);
    return randomBytes(count).toString('base64');
  }),
};
