import { isJsonObject, jsonEqual, JsonValue } from '../util/json';
import { formatGoValue, parseGoFloat } from './goformat';

/** KubeMod's `undefined`: the value of a path through a missing property. */
export const UNDEF: unique symbol = Symbol('undefined');
/** An evaluation error (wrong operand type, bad regex at run time): the filter element or select yields nothing. */
export const ERR: unique symbol = Symbol('error');
/** What an expression evaluates to. */
export type Val = JsonValue | typeof UNDEF | typeof ERR;

/** gval's float conversion: numbers, and strings Go's ParseFloat accepts. */
export function toFloat(v: Val): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return parseGoFloat(v);
  return undefined;
}

/** gval's bool conversion: booleans, numbers (non-zero is true), and "true"/"TRUE"/"false"/"FALSE". */
export function toBool(v: Val): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (v === 'true' || v === 'TRUE') return true;
  if (v === 'false' || v === 'FALSE') return false;
  return undefined;
}

/** gval's `==` with KubeMod's undefined rule: same-type compare, then number, then bool conversion, then deep equality. */
export function looseEquals(a: JsonValue, b: JsonValue): boolean {
  const ta = typeof a;
  if (ta === typeof b && (ta === 'number' || ta === 'boolean')) return a === b;
  const fa = toFloat(a);
  if (fa !== undefined) {
    const fb = toFloat(b);
    if (fb !== undefined) return fa === fb;
  }
  const ba = toBool(a);
  if (ba !== undefined) {
    const bb = toBool(b);
    if (bb !== undefined) return ba === bb;
  }
  return jsonEqual(a, b);
}

/** gval's ordering operators: numbers, then strings, then numeric conversion, then Go `%v` text. */
export function compareOrder(a: JsonValue, b: JsonValue): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : a === b ? 0 : NaN;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const fa = toFloat(a);
  const fb = fa === undefined ? undefined : toFloat(b);
  if (fa !== undefined && fb !== undefined) return fa < fb ? -1 : fa > fb ? 1 : fa === fb ? 0 : NaN;
  const sa = formatGoValue(a);
  const sb = formatGoValue(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/** A value as Go's `%v` prints it; strings unchanged. */
export function toText(v: JsonValue): string {
  return typeof v === 'string' ? v : formatGoValue(v);
}

/** KubeMod's length(): arrays, objects, strings (UTF-8 bytes as Go's len), 0 for null/undefined; ERR otherwise. */
export function lengthOf(v: Val): number | typeof ERR {
  if (v === null || v === UNDEF) return 0;
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (Array.isArray(v)) return v.length;
  if (isJsonObject(v)) return Object.keys(v).length;
  return ERR;
}
