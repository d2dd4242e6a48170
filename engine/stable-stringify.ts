import { JsonObject, JsonValue } from '../util/json';
import { setOwn } from '../patch/object';

/** Compact JSON with object keys sorted, as Go's encoding/json writes maps. */
export function stableStringify(v: JsonValue): string {
  const sorted = sortedView(v);
  return sorted === undefined ? sortedStringify(v) : JSON.stringify(sorted);
}

// Digit-only keys enumerate before all others whatever the insertion order: those objects take the slow path.
const DIGIT_KEY = /^\d+$/;

/**
 * `v` itself when every object's keys already enumerate in sorted order (kubectl writes the annotation sorted and
 * JSON.parse keeps the order), else a copy in sorted order that shares the sorted parts, so the native writer can
 * do the rest. undefined when an object has digit-only keys.
 */
function sortedView(v: JsonValue): JsonValue | undefined {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    let out: JsonValue[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x = sortedView(v[i]);
      if (x === undefined) return undefined;
      if (x !== v[i]) (out ??= v.slice())[i] = x;
    }
    return out ?? v;
  }
  // One pass without allocating: a sorted subtree (the usual case, kubectl writes it so) is returned as it is.
  let prev: string | undefined;
  let inOrder = true;
  let views: Map<string, JsonValue> | undefined;
  for (const k in v) {
    const c = k.charCodeAt(0);
    if (c >= 48 && c <= 57 && DIGIT_KEY.test(k)) return undefined;
    if (prev !== undefined && prev >= k) inOrder = false;
    prev = k;
    const x = sortedView(v[k]);
    if (x === undefined) return undefined;
    if (x !== v[k]) (views ??= new Map()).set(k, x);
  }
  if (inOrder && views === undefined) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) setOwn(out, k, views?.has(k) ? (views.get(k) as JsonValue) : v[k]);
  return out;
}

function sortedStringify(v: JsonValue): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(sortedStringify).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedStringify(v[k])}`).join(',')}}`;
}
