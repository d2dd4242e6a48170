import { createHash, randomUUID } from 'node:crypto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { FunctionError, TemplateRuntimeError } from '../errors';
import { def, FuncDef } from '../registry';
import { Budget, GoValue, isMap, newMap, sortedKeys } from '../values';

const s = (v: GoValue): string => v as string;

const HTML_OR_SEPARATOR = /[<>&\u2028\u2029]/;
const SEPARATOR = /[\u2028\u2029]/;

/** JSON string escaping as Go's encoding/json (HTML-safe unless raw). */
function quoteJson(str: string, html: boolean): string {
  let out = JSON.stringify(str);
  // Most strings need none of the extra escapes: one scan instead of three replacements.
  if (!(html ? HTML_OR_SEPARATOR : SEPARATOR).test(out)) return out;
  if (html) out = out.replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
  return out.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/**
 * Go's json.Marshal / MarshalIndent of a template value; throws FunctionError for NaN/Inf. `charge` (the render's
 * step meter) pays as it goes: encoding a large object is slow, and paid for only at the end it overran budgets.
 */
export function goJson(
  v: GoValue,
  opts: { html: boolean; indent: string },
  budget: Budget,
  charge: (n: number) => void = () => {},
): string {
  const parts: string[] = [];
  const write = (x: string): void => {
    budget.spend(x.length);
    charge(2 + (x.length >> 4));
    parts.push(x);
  };
  const enc = (x: GoValue, depth: number): void => {
    if (depth > 1000) throw new FunctionError('json: value nested too deeply');
    const nl = opts.indent ? '\n' + opts.indent.repeat(depth + 1) : '';
    const nlEnd = opts.indent ? '\n' + opts.indent.repeat(depth) : '';
    if (x === null || x === undefined) write('null');
    else if (typeof x === 'string') write(quoteJson(x, opts.html));
    else if (typeof x === 'boolean') write(x ? 'true' : 'false');
    else if (typeof x === 'bigint') write(x.toString());
    else if (typeof x === 'number') {
      if (!Number.isFinite(x)) throw new FunctionError(`json: unsupported value: ${x}`);
      write(String(x));
    } else if (Array.isArray(x)) {
      if (x.length === 0) return write('[]');
      write('[');
      x.forEach((e, i) => {
        if (i > 0) write(',');
        write(nl);
        enc(e, depth + 1);
      });
      write(nlEnd + ']');
    } else {
      const keys = sortedKeys(x);
      if (keys.length === 0) return write('{}');
      write('{');
      keys.forEach((k, i) => {
        if (i > 0) write(',');
        write(nl + quoteJson(k, opts.html) + (opts.indent ? ': ' : ':'));
        enc(x[k], depth + 1);
      });
      write(nlEnd + '}');
    }
  };
  enc(v, 0);
  return parts.join('');
}

// JSON.parse builds ordinary objects; rebuild as prototype-free maps so keys like __proto__ stay data.
function fromPlain(v: unknown): GoValue {
  if (Array.isArray(v)) return v.map(fromPlain);
  if (typeof v === 'object' && v !== null) {
    const m = newMap();
    for (const [k, x] of Object.entries(v)) m[k] = fromPlain(x);
    return m;
  }
  return v as GoValue;
}

function toPlain(v: GoValue, charge: (n: number) => void, depth = 0): unknown {
  if (depth > 1000) throw new FunctionError('value nested too deeply to encode');
  if (Array.isArray(v)) {
    charge(v.length + 1);
    return v.map((x) => toPlain(x, charge, depth + 1));
  }
  if (isMap(v)) {
    const o: Record<string, unknown> = {};
    const keys = sortedKeys(v);
    charge(keys.length + 1);
    for (const k of keys) {
      Object.defineProperty(o, k, { value: toPlain(v[k], charge, depth + 1), enumerable: true });
    }
    return o;
  }
  if (typeof v === 'bigint') return Number(v);
  return v === undefined ? null : v;
}

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

function b64dec(str: string): string {
  // Go's StdEncoding is strict: padding required, no stray characters; report the offending byte as Go does.
  const bad = str.search(/[^A-Za-z0-9+/=]/);
  if (bad >= 0) return `illegal base64 data at input byte ${bad}`;
  if (!B64.test(str) || str.length % 4 !== 0) {
    const pad = str.indexOf('=');
    return `illegal base64 data at input byte ${pad >= 0 ? pad : str.length - (str.length % 4)}`;
  }
  return Buffer.from(str, 'base64').toString('utf8');
}

function adler32(str: string): number {
  let a = 1;
  let b = 0;
  for (const byte of Buffer.from(str, 'utf8')) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return (b * 65536 + a) >>> 0;
}

const hash = (alg: string) => def(['string'], (_c, v) => createHash(alg).update(s(v), 'utf8').digest('hex'));
const json = (html: boolean, indent: string) =>
  def(['any'], (ctx, v) => {
    try {
      return goJson(v, { html, indent }, new Budget(ctx.maxString), (n) => ctx.charge(n));
    } catch (e) {
      // Sprig's toJson swallows marshalling errors and returns ""; our size limit is a real error.
      if (e instanceof FunctionError) return '';
      if (e instanceof TemplateRuntimeError)
        throw new FunctionError(`toJson result longer than ${ctx.maxString} bytes`);
      throw e;
    }
  });

/** Sprig's encoding, hashing and serialisation functions (plus Helm's toYaml/fromYaml). */
export const ENCODING_FUNCTIONS: Record<string, FuncDef> = {
  b64enc: def(['string'], (_c, v) => Buffer.from(s(v), 'utf8').toString('base64')),
  b64dec: def(['string'], (_c, v) => b64dec(s(v))),
  toJson: json(true, ''),
  toPrettyJson: json(true, '  '),
  toRawJson: json(false, ''),
  fromJson: def(['string'], (_c, v) => {
    try {
      return fromPlain(JSON.parse(s(v)));
    } catch {
      return null;
    }
  }),
  toYaml: def(['any'], (ctx, v) => {
    const plain = toPlain(v, (n) => ctx.charge(n));
    const out = stringifyYaml(plain, {
      version: '1.1',
      indentSeq: false,
      lineWidth: 0,
      sortMapEntries: true,
    });
    if (out.length > ctx.maxString)
      throw new FunctionError(`toYaml result longer than ${ctx.maxString} bytes`);
    return out.replace(/\n$/, '');
  }),
  fromYaml: def(['string'], (_c, v) => {
    try {
      return fromPlain(parseYaml(s(v), { maxAliasCount: 100 }) ?? newMap());
    } catch (e) {
      const m = newMap();
      m.Error = (e as Error).message;
      return m;
    }
  }),
  sha1sum: hash('sha1'),
  sha256sum: hash('sha256'),
  sha512sum: hash('sha512'),
  adler32sum: def(['string'], (_c, v) => String(adler32(s(v)))),
  uuidv4: def([], () => randomUUID()),
};
