import { JsonValue } from './json';

/**
 * Deepest object nesting the engine evaluates rules against. The request path (clone, diff, select, render, the
 * last-applied annotation) recurses over objects; Node's default stack overflows at a few thousand levels. No real
 * manifest comes near 1,000 levels: built-in kinds nest a dozen or so, and custom resources this deep are refused by
 * the rules with a warning rather than crash them.
 */
export const MAX_OBJECT_DEPTH = 1000;

/** True when `v` nests deeper than `limit` levels of objects/arrays; stops at the first such path. */
export function deeperThan(v: JsonValue, limit: number = MAX_OBJECT_DEPTH): boolean {
  return v !== null && typeof v === 'object' && nestsDeeper(v, 1, limit);
}

// Recursion at most `limit` + 1 frames deep (it stops there), without allocating: on every admitted object, this is
// about half the cost of an explicit stack of Object.values arrays.
function nestsDeeper(v: JsonValue, depth: number, limit: number): boolean {
  if (depth > limit) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const c = v[i];
      if (c !== null && typeof c === 'object' && nestsDeeper(c, depth + 1, limit)) return true;
    }
    return false;
  }
  const o = v as Record<string, JsonValue>;
  for (const k in o) {
    const c = o[k];
    if (c !== null && typeof c === 'object' && nestsDeeper(c, depth + 1, limit)) return true;
  }
  return false;
}
