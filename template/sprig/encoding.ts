import { createHash, randomUUID } from 'node:crypto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { BudgetExhaustedError } from '../../util/budget';
import { FunctionError, TemplateRuntimeError } from '../errors';
import { def, FuncContext, FuncDef } from '../registry';
import { Budget, GoValue, isMap, newMap, sortedKeys } from '../values';
import { errorOf, messageOf } from '../../util/errors';

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

// JSON.parse builds ordinary objects; rebuild as prototype-free maps so keys like __proto__ stay data. Paid as it goes.
function fromPlain(v: unknown, charge: (n: number) => void): GoValue {
  if (Array.isArray(v)) {
    charge(1 + v.length);
    return v.map((x) => fromPlain(x, charge));
  }
  if (typeof v === 'object' && v !== null) {
    const m = newMap();
    const entries = Object.entries(v);
    charge(1 + 2 * entries.length);
    for (const [k, x] of entries) m[k] = fromPlain(x, charge);
    return m;
  }
  return v as GoValue;
}

// A parsed value as template maps; a failure other than the render's limits (a stack overflow) is `failed`'s answer.
function rebuilt(plain: unknown, ctx: FuncContext, failed: (e: Error) => GoValue): GoValue {
  try {
    return fromPlain(plain, (n) => ctx.charge(n));
  } catch (e) {
    if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
    return failed(errorOf(e));
  }
}

// The yaml library is far slower than the rest (measured: ~6 us a node written, ~0.5-1 us a character read) and
// cannot be stopped half-way: what it will cost is paid before it starts, in steps (~0.15 us each).
const YAML_STEPS_PER_NODE = 40;
const YAML_STEPS_PER_CHAR = 4;
// JSON.parse reads ~5 ns a character, natively: paid before it starts, a step per 16 characters.
const JSON_CHARS_PER_STEP = 16;

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
      // goJson pays as it writes: its size budget pays nothing more.
      return goJson(v, { html, indent }, new Budget(ctx.maxString, null), (n) => ctx.charge(n));
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
  fromJson: def(['string'], (ctx, v) => {
    ctx.charge(Math.floor(s(v).length / JSON_CHARS_PER_STEP));
    let plain: unknown;
    try {
      plain = JSON.parse(s(v));
    } catch {
      return null;
    }
    return rebuilt(plain, ctx, () => null);
  }),
  toYaml: def(['any'], (ctx, v) => {
    let nodes = 0;
    const plain = toPlain(v, (n) => {
      nodes += n;
      ctx.charge(n);
    });
    ctx.charge(nodes * YAML_STEPS_PER_NODE);
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
  fromYaml: def(['string'], (ctx, v) => {
    ctx.charge(s(v).length * YAML_STEPS_PER_CHAR);
    let plain: unknown;
    try {
      plain = parseYaml(s(v), { maxAliasCount: 100 }) ?? newMap();
    } catch (e) {
      const m = newMap();
      m.Error = messageOf(e);
      return m;
    }
    return rebuilt(plain, ctx, (e) => {
      const m = newMap();
      m.Error = e.message;
      return m;
    });
  }),
  sha1sum: hash('sha1'),
  sha256sum: hash('sha256'),
  sha512sum: hash('sha512'),
  // A loop in JavaScript over every byte (~5 ns each): a step per 16 more than the call's string work.
  adler32sum: def(['string'], (ctx, v) => (ctx.charge(s(v).length >> 4), String(adler32(s(v))))),
  uuidv4: def([], () => randomUUID()),
};
