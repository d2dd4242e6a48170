import { isJsonObject, jsonEqual, JsonValue } from '../util/json';
import { escapeToken } from '../patch/pointer';

/** Where an expected (partial) object first differs from the actual one. */
export interface Mismatch {
  path: string;
  expected: JsonValue;
  /** undefined: the actual object has nothing there. */
  actual: JsonValue | undefined;
  /** Set when `expected` is one element that no element of the list at `path` contains (lists: contains). */
  element?: true;
}

/**
 * How expected lists compare: `contains` (the default), the actual list holds elements containing the expected
 * ones in their order, others may come before, between and after them; `exact`, the same length, element by element.
 */
export type ListMatch = 'contains' | 'exact';

/**
 * Finds where `actual` does not contain `expected`: every field of an expected object must be in the actual one
 * with a containing value; lists as `lists` says (elements compared by containment, `{}` matches any element);
 * other values must be equal. null when it is contained.
 */
export function firstMismatch(
  actual: JsonValue | undefined,
  expected: JsonValue,
  lists: ListMatch = 'contains',
  path = '',
): Mismatch | null {
  if (isJsonObject(expected)) {
    if (!isJsonObject(actual)) return { path: path || '/', expected, actual };
    for (const key of Object.keys(expected)) {
      const inner = `${path}/${escapeToken(key)}`;
      if (!Object.prototype.hasOwnProperty.call(actual, key))
        return { path: inner, expected: expected[key], actual: undefined };
      const m = firstMismatch(actual[key], expected[key], lists, inner);
      if (m) return m;
    }
    return null;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return { path: path || '/', expected, actual };
    if (lists === 'contains') return missingElement(actual, expected, path);
    if (actual.length !== expected.length) return { path: path || '/', expected, actual };
    for (let i = 0; i < expected.length; i++) {
      const m = firstMismatch(actual[i], expected[i], lists, `${path}/${i}`);
      if (m) return m;
    }
    return null;
  }
  return actual !== undefined && jsonEqual(actual, expected) ? null : { path: path || '/', expected, actual };
}

/**
 * The first expected element no actual element contains (in order): where the element of the same `name` (the
 * key of containers, env, ports, volumes...) differs when there is one, else the element itself at the list.
 */
function missingElement(
  actual: readonly JsonValue[],
  expected: readonly JsonValue[],
  path: string,
): Mismatch | null {
  const matched = listMatches(actual, expected, 'contains');
  const missing = matched.indexOf(-1);
  if (missing < 0) return null;
  const e = expected[missing];
  const after = missing === 0 ? 0 : matched[missing - 1] + 1;
  const name = isJsonObject(e) && typeof e.name === 'string' ? e.name : undefined;
  const same =
    name === undefined ? -1 : actual.findIndex((a, i) => i >= after && isJsonObject(a) && a.name === name);
  if (same >= 0) return firstMismatch(actual[same], e, 'contains', `${path}/${same}`);
  return { path: path || '/', expected: e, actual: [...actual], element: true };
}

/**
 * For each expected element, the index of the actual element that contains it, taken in order (each after the one
 * before it; the earliest such is taken, which finds an in-order match whenever one exists); -1 from the first
 * element that has none.
 */
function listMatches(
  actual: readonly JsonValue[],
  expected: readonly JsonValue[],
  lists: ListMatch,
): number[] {
  const out: number[] = [];
  let next = 0;
  for (const e of expected) {
    while (next < actual.length && firstMismatch(actual[next], e, lists) !== null) next++;
    out.push(next < actual.length ? next++ : -1);
  }
  return out;
}

/**
 * The part of `actual` that `expected` talks about (its keys, its list lengths), so a diff of a partial
 * expectation against the result shows only what the test checks. With lists: contains, an actual list keeps all
 * its elements, each cut to the keys of the expected element it matched (else of the first expected element).
 */
export function projectOnto(
  actual: JsonValue | undefined,
  expected: JsonValue,
  lists: ListMatch = 'contains',
): JsonValue | undefined {
  if (isJsonObject(expected) && isJsonObject(actual)) {
    const out: Record<string, JsonValue> = {};
    for (const key of Object.keys(expected)) {
      if (!Object.prototype.hasOwnProperty.call(actual, key)) continue;
      const v = projectOnto(actual[key], expected[key], lists);
      if (v !== undefined) out[key] = v;
    }
    return out;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (lists === 'exact')
      return actual.map((a, i) => (i < expected.length ? (projectOnto(a, expected[i], lists) ?? null) : a));
    const matched = listMatches(actual, expected, lists);
    return actual.map((a, i) => {
      const k = matched.indexOf(i);
      const shape = k >= 0 ? expected[k] : expected[0];
      return shape === undefined ? a : (projectOnto(a, shape, lists) ?? null);
    });
  }
  return actual;
}

/** One line of a diff: ' ' both, '-' expected only, '+' actual only. */
export interface DiffLine {
  kind: ' ' | '-' | '+';
  text: string;
}

// Above this many lines on both sides the quadratic table costs too much; fall back to "all removed, all added".
const MAX_DIFF_CELLS = 4_000_000;

/** A line diff (longest common subsequence) of two texts. */
export function diffLines(expected: string, actual: string): DiffLine[] {
  const a = expected.replace(/\n$/, '').split('\n');
  const b = actual.replace(/\n$/, '').split('\n');
  if (a.length * b.length > MAX_DIFF_CELLS) {
    return [
      ...a.map((text) => ({ kind: '-' as const, text })),
      ...b.map((text) => ({ kind: '+' as const, text })),
    ];
  }
  // lcs[i][j] = length of the LCS of a[i..] and b[j..]
  const lcs: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ kind: ' ', text: a[i] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({ kind: '-', text: a[i++] });
    else out.push({ kind: '+', text: b[j++] });
  }
  while (i < a.length) out.push({ kind: '-', text: a[i++] });
  while (j < b.length) out.push({ kind: '+', text: b[j++] });
  return out;
}

/** The changed lines with `context` unchanged lines around them; '...' marks what is left out. */
export function withContext(lines: readonly DiffLine[], context = 3): DiffLine[] {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((l, i) => {
    if (l.kind === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(lines.length - 1, i + context); k++) keep[k] = true;
  });
  const out: DiffLine[] = [];
  let skipped = false;
  lines.forEach((l, i) => {
    if (keep[i]) {
      out.push(l);
      skipped = false;
    } else if (!skipped) {
      out.push({ kind: ' ', text: '...' });
      skipped = true;
    }
  });
  return out;
}
