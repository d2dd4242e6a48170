import { FunctionError } from '../errors';
import { def, FuncDef } from '../registry';
import { GoMap, GoValue, isMap, mapGet, newMap, sortedKeys } from '../values';
import { isEmpty, strval } from './convert';

const d = (v: GoValue): GoMap | null => (isMap(v) ? v : null);

function requireMap(v: GoValue): GoMap {
  if (!isMap(v)) throw new FunctionError('assignment to entry in nil map');
  return v;
}

/** Deep copy with a work budget (shared sub-structures can multiply). */
export function deepCopy(v: GoValue, charge: (n: number) => void, depth = 0): GoValue {
  if (depth > 1000) throw new FunctionError('value nested too deeply to copy');
  if (Array.isArray(v)) {
    // Allocation dominates copying: charge several steps per element.
    charge(4 * (v.length + 1));
    return v.map((x) => deepCopy(x, charge, depth + 1));
  }
  if (isMap(v)) {
    const out = newMap();
    const keys = Object.keys(v);
    charge(4 * (keys.length + 1));
    for (const k of keys) out[k] = deepCopy(v[k], charge, depth + 1);
    return out;
  }
  return v;
}

// mergo.Merge without override: fill keys that are absent (or empty) in dst, recursing into maps.
function merge(dst: GoMap, src: GoMap, charge: (n: number) => void, depth: number): void {
  if (depth > 1000) throw new FunctionError('value nested too deeply to merge');
  const keys = Object.keys(src);
  charge(keys.length);
  for (const k of keys) {
    const dv = mapGet(dst, k);
    const sv = src[k];
    if (isMap(dv) && isMap(sv)) merge(dv, sv, charge, depth + 1);
    else if (dv === undefined || isEmpty(dv)) dst[k] = sv;
  }
}

/** Sprig's dict functions. */
export const DICT_FUNCTIONS: Record<string, FuncDef> = {
  dict: def(
    [],
    (ctx, ...kv) => {
      ctx.charge(kv.length);
      const m = newMap();
      for (let i = 0; i < kv.length; i += 2) m[strval(kv[i])] = i + 1 < kv.length ? kv[i + 1] : '';
      return m;
    },
    'any',
  ),
  get: def(['dict', 'string'], (_c, m, k) => {
    const v = d(m) ? mapGet(m as GoMap, k as string) : undefined;
    return v === undefined ? '' : v;
  }),
  set: def(['dict', 'string', 'any'], (_c, m, k, v) => {
    requireMap(m)[k as string] = v;
    return m;
  }),
  unset: def(['dict', 'string'], (_c, m, k) => {
    if (isMap(m)) delete m[k as string];
    return m;
  }),
  hasKey: def(['dict', 'string'], (_c, m, k) => isMap(m) && mapGet(m, k as string) !== undefined),
  keys: def(
    [],
    (ctx, ...ms) => {
      const out: string[] = [];
      for (const m of ms) if (isMap(m)) out.push(...sortedKeys(m));
      ctx.charge(out.length);
      return out;
    },
    'dict',
  ),
  values: def(['dict'], (ctx, m) => {
    if (!isMap(m)) return [];
    const keys = sortedKeys(m);
    ctx.charge(keys.length);
    return keys.map((k) => m[k]);
  }),
  pluck: def(
    ['string'],
    (ctx, name, ...ms) => {
      ctx.charge(ms.length);
      const out: GoValue[] = [];
      for (const m of ms) {
        const v = isMap(m) ? mapGet(m, name as string) : undefined;
        if (v !== undefined) out.push(v);
      }
      return out;
    },
    'dict',
  ),
  pick: def(
    ['dict'],
    (ctx, m, ...keys) => {
      ctx.charge(keys.length);
      const out = newMap();
      for (const k of keys) {
        const v = isMap(m) ? mapGet(m, k as string) : undefined;
        if (v !== undefined) out[k as string] = v;
      }
      return out;
    },
    'string',
  ),
  omit: def(
    ['dict'],
    (ctx, m, ...keys) => {
      const out = newMap();
      if (!isMap(m)) return out;
      const drop = new Set(keys as string[]);
      const all = Object.keys(m);
      ctx.charge(all.length);
      for (const k of all) if (!drop.has(k)) out[k] = m[k];
      return out;
    },
    'string',
  ),
  merge: def(
    ['dict'],
    (ctx, dst, ...srcs) => {
      const target = requireMap(dst);
      for (const s of srcs) if (isMap(s)) merge(target, s, (n) => ctx.charge(n), 0);
      return target;
    },
    'dict',
  ),
  mergeOverwrite: def(
    ['dict'],
    (ctx, dst, ...srcs) => {
      const target = requireMap(dst);
      const over = (a: GoMap, b: GoMap, depth: number): void => {
        if (depth > 1000) throw new FunctionError('value nested too deeply to merge');
        const keys = Object.keys(b);
        ctx.charge(keys.length);
        for (const k of keys) {
          const av = mapGet(a, k);
          if (isMap(av) && isMap(b[k])) over(av, b[k] as GoMap, depth + 1);
          else if (!isEmpty(b[k]) || av === undefined) a[k] = b[k];
        }
      };
      for (const s of srcs) if (isMap(s)) over(target, s, 0);
      return target;
    },
    'dict',
  ),
  deepCopy: def(['any'], (ctx, v) => deepCopy(v === undefined ? null : v, (n) => ctx.charge(n))),
  dig: def(
    ['any'],
    (_c, ...args) => {
      if (args.length < 3) throw new FunctionError('dig needs at least three arguments');
      const m = args[args.length - 1];
      const dflt = args[args.length - 2];
      let cur: GoValue = m;
      for (const k of args.slice(0, -2)) {
        if (!isMap(cur)) return dflt;
        cur = mapGet(cur, strval(k));
        if (cur === undefined) return dflt;
      }
      return cur;
    },
    'any',
  ),
};
