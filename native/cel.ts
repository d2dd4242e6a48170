import { isJsonObject, JsonValue } from '../util/json';

/*
 * CEL text for the expressions the compiler writes. Everything is built from strings here; the API server parses
 * and type-checks them (the e2e suite proves they do what the engine does).
 */

/** A CEL string literal (double-quoted, escaped). */
export function celString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + '"';
}

/** Largest integer written as a CEL int literal; constants beyond it do not compile (float64 in KubeMod). */
export const MAX_SAFE_INT = Number.MAX_SAFE_INTEGER;

/** Thrown for a constant the compiler cannot write as CEL with the same JSON. */
export class UnsupportedValueError extends Error {}

/** A CEL number literal: integers as int, others as double (JSON numbers keep their value either way). */
export function celNumber(n: number): string {
  if (!Number.isFinite(n)) throw new UnsupportedValueError(`number ${n} has no JSON form`);
  if (Number.isInteger(n)) {
    if (Math.abs(n) > MAX_SAFE_INT) throw new UnsupportedValueError(`integer ${n} is beyond 2^53`);
    return Object.is(n, -0) ? '0' : String(n);
  }
  const text = String(n);
  return /[.eE]/.test(text) ? text : `${text}.0`;
}

/**
 * A JSON value as a CEL literal. Map values and list elements are wrapped in dyn(): CEL map and list literals must
 * otherwise have one element type, and ModRule values mix strings, numbers, booleans, lists and maps freely.
 */
export function celValue(v: JsonValue): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return celString(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return celNumber(v);
  if (Array.isArray(v)) return `[${v.map((x) => `dyn(${celValue(x)})`).join(', ')}]`;
  if (isJsonObject(v)) {
    const entries = Object.keys(v).map((k) => `${celString(k)}: dyn(${celValue(v[k])})`);
    return `{${entries.join(', ')}}`;
  }
  throw new UnsupportedValueError(`unsupported value ${String(v)}`);
}

/** Conjunction; `true` when empty. Operands are parenthesised. */
export function and(parts: readonly string[]): string {
  const ps = parts.filter((p) => p !== 'true');
  if (ps.includes('false')) return 'false';
  if (ps.length === 0) return 'true';
  return ps.length === 1 ? ps[0] : ps.map(paren).join(' && ');
}

/** Disjunction; `false` when empty. */
export function or(parts: readonly string[]): string {
  const ps = parts.filter((p) => p !== 'false');
  if (ps.includes('true')) return 'true';
  if (ps.length === 0) return 'false';
  return ps.length === 1 ? ps[0] : ps.map(paren).join(' || ');
}

/** Negation. */
export function not(e: string): string {
  if (e === 'true') return 'false';
  if (e === 'false') return 'true';
  return `!${paren(e)}`;
}

/** `cond ? a : b`, folded when cond is a constant. */
export function ternary(cond: string, a: string, b: string): string {
  if (cond === 'true') return a;
  if (cond === 'false') return b;
  return `${paren(cond)} ? ${paren(a)} : ${paren(b)}`;
}

const SIMPLE = /^[!]?[A-Za-z_][\w.]*(?:\([^()]*\))?$|^"(?:[^"\\]|\\.)*"$|^[\d.]+$/;

/** Wraps an expression in parentheses unless it is obviously atomic. */
export function paren(e: string): string {
  return SIMPLE.test(e) ? e : `(${e})`;
}

/** CEL regex literal (RE2 in both: KubeMod's Go regexp, CEL's matches()). */
export function celRegex(pattern: string): string {
  return JSON.stringify(pattern);
}
