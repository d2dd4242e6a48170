import { FunctionError } from '../errors';
import { formatValue, goKindName, GoValue, isMap } from '../values';

/** Sprig's strval: strings as-is, everything else via fmt %v. */
export function strval(v: GoValue): string {
  return typeof v === 'string' ? v : formatValue(v === undefined ? null : v);
}

/** Wraps an int64 result the way Go arithmetic overflows. */
export function int64(n: bigint): bigint {
  return BigInt.asIntN(64, n);
}

/** cast.ToInt64 as Sprig uses it: floats truncate, unparsable strings give 0. */
export function toInt64(v: GoValue): bigint {
  switch (typeof v) {
    case 'bigint':
      return int64(v);
    case 'number':
      if (!Number.isFinite(v)) return -(2n ** 63n);
      return int64(BigInt(Math.trunc(v)));
    case 'boolean':
      return v ? 1n : 0n;
    case 'string': {
      // cast trims a zero decimal part ("3.0") and accepts 0x/0o/0b prefixes, as strconv.ParseInt(s, 0, 0).
      const s = v.replace(/\.0*$/, '');
      const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[oO]?[0-7_]+|0[bB][01_]+|[0-9_]+)$/.exec(s);
      if (!m) return 0n;
      let body = m[2].replace(/_/g, '');
      if (/^0[0-7]+$/.test(body)) body = `0o${body.slice(1)}`;
      const n = BigInt(body) * (m[1] === '-' ? -1n : 1n);
      return n >= -(2n ** 63n) && n < 2n ** 63n ? n : 0n;
    }
    default:
      return 0n;
  }
}

/** cast.ToFloat64: numbers and numeric strings, else 0. */
export function toFloat64(v: GoValue): number {
  switch (typeof v) {
    case 'number':
      return v;
    case 'bigint':
      return Number(v);
    case 'boolean':
      return v ? 1 : 0;
    case 'string': {
      const s = v.trim() === v ? v : '';
      if (!/^[+-]?(\d[\d_]*\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|[Ii]nf(inity)?|NaN)$/.test(s)) return 0;
      const n = Number(s.replace(/_/g, '').replace(/^([+-]?)[Ii]nf(inity)?$/, '$1Infinity'));
      return Number.isNaN(n) && s !== 'NaN' ? 0 : n;
    }
    default:
      return 0;
  }
}

/** A JS number from an int parameter (already a bigint). */
export function num(v: GoValue): number {
  return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : 0;
}

/** Sprig's strslice: a list's non-nil elements as strings, or a one-element list. */
export function strslice(v: GoValue): string[] {
  if (Array.isArray(v)) return v.filter((x) => x !== null && x !== undefined).map(strval);
  if (v === null || v === undefined) return [];
  return [strval(v)];
}

/** The list argument of Sprig's list functions; throws Sprig's message for other types. */
export function asList(v: GoValue, what: string): GoValue[] {
  if (Array.isArray(v)) return v;
  throw new FunctionError(`Cannot ${what} on type ${goKindName(v)}`);
}

/** Sprig's empty(): zero values, empty collections and nil are empty. */
export function isEmpty(v: GoValue): boolean {
  if (v === undefined || v === null) return true;
  switch (typeof v) {
    case 'string':
      return v.length === 0;
    case 'boolean':
      return !v;
    case 'number':
      return v === 0;
    case 'bigint':
      return v === 0n;
  }
  if (Array.isArray(v)) return v.length === 0;
  return isMap(v) && Object.keys(v).length === 0;
}
