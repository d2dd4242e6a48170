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

/** Formats a JSON value as Go's fmt `%v` does for values decoded by encoding/json (KubeMod converts select results this way). */
export function formatGoValue(v: JsonValue): string {
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return formatGoFloat(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${v.map(formatGoValue).join(' ')}]`;
  if (isJsonObject(v)) {
    const keys = Object.keys(v).sort();
    return `map[${keys.map((k) => `${k}:${formatGoValue(v[k])}`).join(' ')}]`;
  }
  return String(v);
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
