import { TemplateRuntimeError } from './errors';

/**
 * A Go value as text/template sees decoded JSON: `undefined` is the invalid "no value", `null` a nil interface,
 * `number` float64, `bigint` int/int64, arrays []interface{}, plain objects map[string]interface{}.
 */
export type GoValue = undefined | null | boolean | number | bigint | string | GoValue[] | GoMap;
/** map[string]interface{}. */
export interface GoMap {
  [key: string]: GoValue;
}

/** True for map[string]interface{} values. */
export function isMap(v: GoValue): v is GoMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own-property lookup that never reaches Object.prototype. */
export function mapGet(m: GoMap, key: string): GoValue {
  return Object.prototype.hasOwnProperty.call(m, key) ? m[key] : undefined;
}

/** A fresh map that has no prototype, so keys like `__proto__` are ordinary keys. */
export function newMap(): GoMap {
  return Object.create(null) as GoMap;
}

/** What pays for formatting: a render's step meter. */
export interface Meter {
  charge(n: number): void;
}

// The render being evaluated: it pays for every value formatted (and large map sorted) on its behalf, by its
// functions too.
let currentMeter: Meter | null = null;

/**
 * Makes `meter` pay for every value formatted from now on (see Budget); returns the one it replaces, to be put back
 * (a render sets its own around its run: no closure per render).
 */
export function useMeter(meter: Meter | null): Meter | null {
  const outer = currentMeter;
  currentMeter = meter;
  return outer;
}

/** Sorted keys, as Go's fmt and encoding/json order maps. */
export function sortedKeys(m: GoMap): string[] {
  const keys = Object.keys(m);
  // Sorting a large map's keys (~0.3 us a key for 20,000) is paid for before it starts, by the render evaluated.
  if (keys.length >= 64) currentMeter?.charge(2 * keys.length);
  return keys.sort(compareStrings);
}

/** Byte-wise (UTF-8) string order as Go's sort.Strings; code unit order matches except for surrogates. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Go's `%T` for a value. */
export function goTypeName(v: GoValue): string {
  if (v === undefined || v === null) return '<nil>';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return 'float64';
    case 'bigint':
      return 'int';
    default:
      return Array.isArray(v) ? '[]interface {}' : 'map[string]interface {}';
  }
}

/** Go's reflect Kind name for a value. */
export function goKindName(v: GoValue): string {
  if (v === undefined || v === null) return 'invalid';
  if (Array.isArray(v)) return 'slice';
  if (isMap(v)) return 'map';
  return goTypeName(v);
}

/** Formats a float64 as Go's %v / strconv.FormatFloat(f, 'g', -1, 64). */
export function formatFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  if (Number.isInteger(f) && Math.abs(f) < 1e6) return String(f);
  // toExponential() yields the shortest round-tripping digits, as Go's shortest formatting does.
  const [mant, expStr] = f.toExponential().split('e');
  const exp = Number(expStr);
  const neg = mant.startsWith('-');
  const digits = mant.replace('-', '').replace('.', '');
  const sign = neg ? '-' : '';
  // Go's shortest 'g' switches to exponent form below 1e-4 and from 1e6 (fmt.Println(1e6) prints 1e+06).
  if (exp < -4 || exp >= 6) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp);
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  }
  return sign + plain(digits, exp);
}

function plain(digits: string, exp: number): string {
  if (exp < 0) return `0.${'0'.repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return digits + '0'.repeat(exp + 1 - digits.length);
  return `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

/**
 * Accumulates formatted text and stops once a size budget is spent (shared structures can expand hugely). Each spend
 * is also paid to `meter` (default: the render being evaluated, see useMeter): a step, and one per 64 characters, so
 * formatting a large value is stopped by the request budget as it goes.
 */
export class Budget {
  used = 0;
  constructor(
    readonly limit: number,
    private readonly meter: Meter | null = currentMeter,
  ) {}
  /** Counts n more characters; throws past the limit. */
  spend(n: number): void {
    this.used += n;
    this.meter?.charge(1 + (n >> 6));
    if (this.used > this.limit) throw new TemplateRuntimeError(`output exceeds ${this.limit} bytes`);
  }
}

const MAX_FORMAT_DEPTH = 1000;
// No template result may exceed 1 MiB, so no formatted value needs to either.
const DEFAULT_FORMAT_BUDGET = 1024 * 1024;

/** Go's fmt %v of a value; `<no value>` for the invalid value, `<nil>` for nil. */
export function formatValue(v: GoValue, budget?: Budget): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return formatFloat(v);
    case 'bigint':
      return v.toString();
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return '<no value>';
  }
  if (v === null) return '<nil>';
  const parts: string[] = [];
  formatInto(v, parts, budget ?? new Budget(DEFAULT_FORMAT_BUDGET), 0);
  return parts.join('');
}

function formatInto(v: GoValue, out: string[], budget: Budget, depth: number): void {
  if (depth > MAX_FORMAT_DEPTH) throw new TemplateRuntimeError('value nested too deeply to print');
  if (Array.isArray(v)) {
    out.push('[');
    budget.spend(2);
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out.push(' ');
      formatInto(v[i], out, budget, depth + 1);
    }
    out.push(']');
    return;
  }
  if (isMap(v)) {
    out.push('map[');
    budget.spend(5);
    const keys = sortedKeys(v);
    for (let i = 0; i < keys.length; i++) {
      if (i > 0) out.push(' ');
      out.push(keys[i], ':');
      budget.spend(keys[i].length + 2);
      formatInto(v[keys[i]], out, budget, depth + 1);
    }
    out.push(']');
    return;
  }
  const s = v === undefined || v === null ? '<nil>' : formatValue(v);
  budget.spend(s.length);
  out.push(s);
}

/** Go template truthiness: empty strings/collections, zero numbers, false and nil are false. */
export function isTrue(v: GoValue): boolean {
  switch (typeof v) {
    case 'boolean':
      return v;
    case 'string':
      return v.length > 0;
    case 'number':
      return v !== 0;
    case 'bigint':
      return v !== 0n;
    case 'undefined':
      return false;
  }
  if (v === null) return false;
  if (Array.isArray(v)) return v.length > 0;
  for (const k in v) if (Object.prototype.hasOwnProperty.call(v, k)) return true;
  return false;
}

/** reflect.DeepEqual over Go values (float64 and int differ); `charge` pays for each node compared. */
export function deepEqual(a: GoValue, b: GoValue, charge?: (n: number) => void, depth = 0): boolean {
  if (depth > MAX_FORMAT_DEPTH) throw new TemplateRuntimeError('value nested too deeply to compare');
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    return false;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    charge?.(a.length);
    return a.every((x, i) => deepEqual(x, b[i], charge, depth + 1));
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  charge?.(ka.length);
  return ka.every(
    (k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k], charge, depth + 1),
  );
}

/** UTF-8 byte length, which is what Go's len and string slicing count. */
export function byteLength(s: string): number {
  // Fast path: pure ASCII strings have one byte per code unit.
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/** Go-style string slicing by byte offsets. */
export function byteSlice(s: string, start: number, end?: number): string {
  if (byteLength(s) === s.length) return s.slice(start, end);
  return Buffer.from(s, 'utf8').subarray(start, end).toString('utf8');
}
