import { FunctionError } from '../errors';
import { def, FuncContext, FuncDef } from '../registry';
import { compareStrings, deepEqual, goKindName, GoValue } from '../values';
import { asList, isEmpty, strslice, toInt64 } from './convert';

const has = (list: readonly GoValue[], v: GoValue, ctx: FuncContext): boolean =>
  list.some((x) => deepEqual(x, v, (n) => ctx.charge(n)));

/** Sprig's list functions. */
export const LIST_FUNCTIONS: Record<string, FuncDef> = {
  list: def([], (ctx, ...vs) => (ctx.charge(vs.length), vs), 'any'),
  tuple: def([], (ctx, ...vs) => (ctx.charge(vs.length), vs), 'any'),
  first: def(['any'], (_c, l) => {
    const a = asList(l, 'find first');
    return a.length ? a[0] : null;
  }),
  last: def(['any'], (_c, l) => {
    const a = asList(l, 'find last');
    return a.length ? a[a.length - 1] : null;
  }),
  rest: def(['any'], (ctx, l) => {
    const a = asList(l, 'find rest');
    ctx.charge(a.length);
    return a.length ? a.slice(1) : null;
  }),
  initial: def(['any'], (ctx, l) => {
    const a = asList(l, 'find initial');
    ctx.charge(a.length);
    return a.length ? a.slice(0, -1) : null;
  }),
  append: def(['any', 'any'], (ctx, l, v) => {
    const a = asList(l, 'push');
    ctx.charge(a.length);
    return [...a, v];
  }),
  push: def(['any', 'any'], (ctx, l, v) => {
    const a = asList(l, 'push');
    ctx.charge(a.length);
    return [...a, v];
  }),
  prepend: def(['any', 'any'], (ctx, l, v) => {
    const a = asList(l, 'prepend');
    ctx.charge(a.length);
    return [v, ...a];
  }),
  concat: def(
    [],
    (ctx, ...lists) => {
      const out: GoValue[] = [];
      for (const l of lists) {
        if (!Array.isArray(l)) throw new FunctionError(`Cannot concat type ${goKindName(l)} as list`);
        ctx.charge(l.length);
        out.push(...l);
      }
      return out;
    },
    'any',
  ),
  reverse: def(['any'], (ctx, l) => {
    const a = asList(l, 'find reverse');
    ctx.charge(a.length);
    return [...a].reverse();
  }),
  uniq: def(['any'], (ctx, l) => {
    const a = asList(l, 'find uniq');
    ctx.charge(a.length * a.length);
    const out: GoValue[] = [];
    for (const v of a) if (!has(out, v, ctx)) out.push(v);
    return out;
  }),
  without: def(
    ['any'],
    (ctx, l, ...omit) => {
      const a = asList(l, 'find without');
      ctx.charge(a.length * (omit.length + 1));
      return a.filter((v) => !has(omit, v, ctx));
    },
    'any',
  ),
  has: def(['any', 'any'], (ctx, needle, haystack) => {
    if (haystack === null || haystack === undefined) return false;
    const a = asList(haystack, 'find has');
    ctx.charge(a.length);
    return has(a, needle, ctx);
  }),
  compact: def(['any'], (ctx, l) => {
    const a = asList(l, 'compact');
    ctx.charge(a.length);
    return a.filter((v) => !isEmpty(v));
  }),
  slice: def(
    ['any'],
    (ctx, l, ...idx) => {
      if (!Array.isArray(l))
        throw new FunctionError(`list should be type of slice or array but ${goKindName(l)}`);
      const start = idx.length > 0 ? Number(toInt64(idx[0])) : 0;
      const end = idx.length > 1 ? Number(toInt64(idx[1])) : l.length;
      if (start < 0 || end > l.length || start > end) {
        throw new FunctionError('reflect: slice index out of range');
      }
      ctx.charge(end - start);
      return l.slice(start, end);
    },
    'any',
  ),
  until: def(['int'], (ctx, n) => {
    const count = Number(n);
    const len = Math.abs(count);
    ctx.charge(len);
    return Array.from({ length: len }, (_v, i) => BigInt(count < 0 ? -i : i));
  }),
  join: def(['string', 'any'], (ctx, sep, l) => {
    const parts = strslice(l);
    ctx.charge(parts.length);
    const size =
      parts.reduce((n, p) => n + p.length, 0) + Math.max(0, parts.length - 1) * (sep as string).length;
    if (size > ctx.maxString) throw new FunctionError(`join result longer than ${ctx.maxString} bytes`);
    return parts.join(sep as string);
  }),
  sortAlpha: def(['any'], (ctx, l) => {
    if (!Array.isArray(l)) return strslice(l);
    ctx.charge(l.length * 4);
    return strslice(l).sort(compareStrings);
  }),
};
