import { FunctionError } from './errors';
import { sprint, sprintf, sprintln } from './fmt';
import { def, FuncDef } from './registry';
import { byteLength, formatValue, GoValue, goTypeName, isMap, isTrue, mapGet } from './values';

type Basic = 'bool' | 'int' | 'float' | 'string' | 'invalid' | 'other';

function basicKind(v: GoValue): Basic {
  switch (typeof v) {
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'int';
    case 'number':
      return 'float';
    case 'string':
      return 'string';
    case 'undefined':
      return 'invalid';
  }
  return v === null ? 'invalid' : 'other';
}

/** Go's eq: true when arg1 equals any of the others; mismatched basic kinds are an error. */
function eq(a: GoValue, ...others: GoValue[]): boolean {
  if (others.length === 0) throw new FunctionError('missing argument for comparison');
  const k1 = basicKind(a);
  for (const b of others) {
    const k2 = basicKind(b);
    if (k1 !== k2) {
      if (k1 !== 'invalid' && k2 !== 'invalid') throw new FunctionError('incompatible types for comparison');
      continue;
    }
    if (k1 === 'other') throw new FunctionError(`non-comparable type ${formatValue(b)}: ${goTypeName(b)}`);
    if (k1 === 'invalid' || a === b) return true;
  }
  return false;
}

function lessThan(a: GoValue, b: GoValue): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === 'invalid' || k1 === 'other' || k1 === 'bool')
    throw new FunctionError('invalid type for comparison');
  if (k1 !== k2) throw new FunctionError('incompatible types for comparison');
  return (a as number | bigint | string) < (b as number | bigint | string);
}

function indexArg(idx: GoValue, len: number): number {
  if (typeof idx !== 'bigint') {
    if (idx === null || idx === undefined) throw new FunctionError('cannot index slice/array with nil');
    throw new FunctionError(`cannot index slice/array with type ${goTypeName(idx)}`);
  }
  if (idx < 0n || idx >= BigInt(len)) throw new FunctionError(`index out of range: ${idx}`);
  return Number(idx);
}

function index(item: GoValue, ...indexes: GoValue[]): GoValue {
  if (item === undefined || item === null) throw new FunctionError('index of untyped nil');
  let cur: GoValue = item;
  for (const idx of indexes) {
    if (cur === null || cur === undefined) throw new FunctionError('index of nil pointer');
    if (Array.isArray(cur)) cur = cur[indexArg(idx, cur.length)];
    else if (typeof cur === 'string') cur = BigInt(Buffer.from(cur, 'utf8')[indexArg(idx, byteLength(cur))]);
    else if (isMap(cur)) {
      if (typeof idx !== 'string') {
        if (idx === null || idx === undefined)
          throw new FunctionError('value is nil; should be of type string');
        throw new FunctionError(`value has type ${goTypeName(idx)}; should be string`);
      }
      const v = mapGet(cur, idx);
      cur = v === undefined ? null : v;
    } else throw new FunctionError(`can't index item of type ${goTypeName(cur)}`);
  }
  return cur;
}

function len(v: GoValue): bigint {
  if (v === null || v === undefined) throw new FunctionError('len of nil pointer');
  if (typeof v === 'string') return BigInt(byteLength(v));
  if (Array.isArray(v)) return BigInt(v.length);
  if (isMap(v)) return BigInt(Object.keys(v).length);
  throw new FunctionError(`len of type ${goTypeName(v)}`);
}

// html/js/urlquery print a lone string as-is, anything else as fmt.Sprint would (nil as <no value>).
function evalArgs(args: GoValue[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(args.map((a) => (a === null || a === undefined ? '<no value>' : a)));
}

function htmlEscape(s: string): string {
  return s.replace(/[<>&'"\0]/g, (c) =>
    c === '<'
      ? '&lt;'
      : c === '>'
        ? '&gt;'
        : c === '&'
          ? '&amp;'
          : c === "'"
            ? '&#39;'
            : c === '"'
              ? '&#34;'
              : '\uFFFD',
  );
}

function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (ch === '"') out += '\\"';
    else if (ch === '<') out += '\\u003C';
    else if (ch === '>') out += '\\u003E';
    else if (ch === '&') out += '\\u0026';
    else if (ch === '=') out += '\\u003D';
    else if (cp < 0x20) out += '\\u' + cp.toString(16).toUpperCase().padStart(4, '0');
    else out += ch;
  }
  return out;
}

// url.QueryEscape: unreserved characters stay, space becomes '+', the rest %XX.
function queryEscape(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%20/g, '+')
    .replace(/~/g, '~');
}

/** Go text/template's predefined functions (and/or are evaluated lazily by the renderer). */
export const BUILTIN_FUNCTIONS: Record<string, FuncDef> = {
  and: def(['any'], (_c, ...vs) => vs.find((v) => !isTrue(v)) ?? vs[vs.length - 1], 'any'),
  or: def(['any'], (_c, ...vs) => vs.find((v) => isTrue(v)) ?? vs[vs.length - 1], 'any'),
  not: def(['any'], (_c, v) => !isTrue(v)),
  len: def(['any'], (_c, v) => len(v)),
  index: def(['any'], (_c, item, ...idx) => index(item, ...idx), 'any'),
  print: def([], (_c, ...vs) => sprint(vs), 'any'),
  printf: def(['string'], (_c, f, ...vs) => sprintf(f as string, vs), 'any'),
  println: def([], (_c, ...vs) => sprintln(vs), 'any'),
  html: def([], (_c, ...vs) => htmlEscape(evalArgs(vs)), 'any'),
  js: def([], (_c, ...vs) => jsEscape(evalArgs(vs)), 'any'),
  urlquery: def([], (_c, ...vs) => queryEscape(evalArgs(vs)), 'any'),
  eq: def(['any'], (_c, a, ...vs) => eq(a, ...vs), 'any'),
  ne: def(['any', 'any'], (_c, a, b) => !eq(a, b)),
  lt: def(['any', 'any'], (_c, a, b) => lessThan(a, b)),
  le: def(['any', 'any'], (_c, a, b) => lessThan(a, b) || eq(a, b)),
  gt: def(['any', 'any'], (_c, a, b) => !lessThan(a, b) && !eq(a, b)),
  ge: def(['any', 'any'], (_c, a, b) => !lessThan(a, b)),
  call: def(
    ['any'],
    () => {
      throw new FunctionError('call is not supported: templates cannot call functions from data');
    },
    'any',
  ),
};
