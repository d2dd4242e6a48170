import { JsonValue } from './json';

/**
 * Deepest object nesting the engine evaluates rules against. The request path (clone, diff, select, render, the
 * last-applied annotation) recurses over objects; Node's default stack overflows at a few thousand levels. No real
 * manifest comes near 1,000 levels: built-in kinds nest a dozen or so, and custom resources this deep are refused by
 * the rules with a warning rather than crash them.
 */
export const MAX_OBJECT_DEPTH = 1000;

/** True when `v` nests deeper than `limit` levels of objects/arrays; iterative, stops at the first such path. */
export function deeperThan(v: JsonValue, limit: number = MAX_OBJECT_DEPTH): boolean {
  if (v === null || typeof v !== 'object') return false;
  const values: JsonValue[] = [v];
  const depths: number[] = [1];
  while (values.length > 0) {
    const cur = values.pop() as JsonValue;
    const depth = depths.pop() as number;
    if (depth > limit) return true;
    const children = Array.isArray(cur) ? cur : Object.values(cur as Record<string, JsonValue>);
    for (let i = 0; i < children.length; i++) {
      const c = children[i];
      if (c !== null && typeof c === 'object') {
        values.push(c);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}
