import { JsonObject, JsonValue } from '../util/json';

// Helpers that treat every key, including "__proto__" and "constructor", as a plain own member.

const hasOwnProperty = Object.prototype.hasOwnProperty;

/** True when obj has key as an own member. */
export function hasOwn(obj: JsonObject, key: string): boolean {
  return hasOwnProperty.call(obj, key);
}

/** Reads an own member, or undefined (never an inherited property). */
export function getOwn(obj: JsonObject, key: string): JsonValue | undefined {
  return hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** Sets an own member; "__proto__" becomes a real key instead of changing the prototype. */
export function setOwn(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/** A deep copy of a JSON value that keeps "__proto__" keys as own members. */
export function cloneValue<T extends JsonValue>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const out = new Array<JsonValue>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = cloneValue(v[i]);
    return out as T;
  }
  const out: JsonObject = {};
  for (const k of Object.keys(v)) setOwn(out, k, cloneValue((v as JsonObject)[k]));
  return out as T;
}
