/** A JSON value as Kubernetes objects are made of. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** True for a plain JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A deep copy of a JSON value (structuredClone is slower for small objects). */
export function cloneJson<T extends JsonValue>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => cloneJson(x)) as T;
  const out: JsonObject = {};
  for (const k of Object.keys(v)) {
    const copy = cloneJson((v as JsonObject)[k]);
    // A "__proto__" key from an admitted object must stay a plain member, not become the copy's prototype.
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: copy, enumerable: true, writable: true, configurable: true });
    else out[k] = copy;
  }
  return out as T;
}

/** Structural equality of two JSON values (object key order ignored). */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k) || !jsonEqual(a[k], b[k])) return false;
  }
  return true;
}
