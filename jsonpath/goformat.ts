import { isJsonObject, JsonValue } from '../util/json';

/** Formats a float64 as Go's fmt `%v` does (`1e+06`, `0.5`, `80`, `+Inf`). */
export function formatGoFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mantissa, expText] = f.toExponential().split('e');
  const exp = Number(expText);
  // %v uses the shortest representation and switches to exponent form outside [1e-4, 1e6).
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    const abs = Math.abs(exp);
    return `${mantissa}e${sign}${abs < 10 ? '0' : ''}${abs}`;
  }
  return String(f);
}

/**
 * Formats a JSON value as Go's fmt `%v` does for values decoded by encoding/json (KubeMod converts select results this
 * way). `charge`, when given, is paid as the formatting goes (a step per element, key and 64 characters), before each
 * container's elements are formatted: a large value is stopped by its budget, not formatted whole first.
 */
export function formatGoValue(v: JsonValue, charge?: (steps: number) => void): string {
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return formatGoFloat(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) {
    charge?.(1 + v.length);
    const parts = new Array<string>(v.length);
    for (let i = 0; i < v.length; i++) parts[i] = element(v[i], charge);
    return `[${parts.join(' ')}]`;
  }
  if (isJsonObject(v)) {
    const keys = Object.keys(v);
    // Sorting costs about as much again as listing.
    charge?.(1 + 2 * keys.length);
    keys.sort();
    const parts = new Array<string>(keys.length);
    for (let i = 0; i < keys.length; i++) parts[i] = `${keys[i]}:${element(v[keys[i]], charge)}`;
    return `map[${parts.join(' ')}]`;
  }
  return String(v);
}

function element(v: JsonValue, charge: ((steps: number) => void) | undefined): string {
  const text = formatGoValue(v, charge);
  if (charge && text.length >= 64 && typeof v === 'string') charge(text.length >> 6);
  return text;
}

const GO_FLOAT = /^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$/i;

/** Go's strconv.ParseFloat for decimal input: the number, or undefined when Go would fail. */
export function parseGoFloat(s: string): number | undefined {
  if (!GO_FLOAT.test(s)) return undefined;
  const lower = s.toLowerCase().replace(/^\+/, '');
  if (lower === 'inf' || lower === 'infinity') return Infinity;
  if (lower === '-inf' || lower === '-infinity') return -Infinity;
  if (lower.endsWith('nan')) return NaN;
  return Number(s);
}
