import { isJsonObject, JsonValue } from '../util/json';
import { and, celString, or } from './cel';

/*
 * Definite paths (names and non-negative indices) from one of the roots a rule can read, written as CEL optional
 * chains and walked in TypeScript the same way. `object` is dyn-typed in policies (they match many resources), so
 * every step is an optional index `[?"name"]`, and so for namespaceObject once it is made dyn.
 */

/** Where a path starts. */
export type Root =
  | { readonly kind: 'object' }
  | { readonly kind: 'namespace' }
  /** A list element bound to a CEL variable (a comprehension), with its JSON value on the TypeScript side. */
  | { readonly kind: 'element'; readonly variable: string };

export type Token = string | number;

/** A path from a root. */
export interface FieldPath {
  readonly root: Root;
  readonly tokens: readonly Token[];
}

/** Absent: a path through a missing member. */
export const ABSENT: unique symbol = Symbol('absent');
export type Found = JsonValue | typeof ABSENT;

/** The CEL optional<dyn> for the path. */
export function celOptional(path: FieldPath): string {
  const { root, tokens } = path;
  let out: string;
  if (root.kind === 'namespace') {
    // namespaceObject is typed (kubernetes.Namespace): as dyn it takes the same index steps as object.
    out = '(namespaceObject != null ? optional.of(dyn(namespaceObject)) : optional.none())';
    for (const t of tokens) out += `[?${celString(String(t))}]`;
    return out;
  }
  out = root.kind === 'object' ? 'object' : root.variable;
  if (tokens.length === 0) return `optional.of(${out})`;
  for (const t of tokens) out += typeof t === 'number' ? `[?${t}]` : `[?${celString(t)}]`;
  return out;
}

/** The CEL list at the path, or an empty list (dyn-typed, so comprehension variables are dyn). */
export function celListAt(path: FieldPath): string {
  return `dyn(${celOptional(path)}.orValue(dyn([])))`;
}

/** The CEL value at the path, or null (dyn-typed). */
export function celValueOrNull(path: FieldPath): string {
  return `dyn(${celOptional(path)}.orValue(null))`;
}

/** Walks a JSON value as KubeMod's select does for names (object members) and indices (list elements). */
export function walk(value: JsonValue, tokens: readonly Token[]): Found {
  let v: JsonValue = value;
  for (const t of tokens) {
    if (typeof t === 'number') {
      if (!Array.isArray(v) || t >= v.length) return ABSENT;
      v = v[t];
    } else {
      if (!isJsonObject(v) || !Object.prototype.hasOwnProperty.call(v, t)) return ABSENT;
      v = v[t];
    }
  }
  return v;
}

/** The JSON value a root stands for in the object the rules see (with syntheticRefs). */
export function rootValue(root: Root, object: JsonValue, element?: JsonValue): Found {
  if (root.kind === 'object') return object;
  if (root.kind === 'element') return element === undefined ? ABSENT : element;
  return walk(object, ['syntheticRefs', 'namespace']);
}

/**
 * CEL that holds when every container on the way to the path is absent or of the kind the next step needs (a map
 * before a name, a list before an index): then the optional chain cannot fail. Null counts as neither.
 */
export function celShape(path: FieldPath): string {
  if (path.root.kind === 'namespace') return 'true';
  const parts: string[] = [];
  for (let i = 0; i < path.tokens.length; i++) {
    const prefix: FieldPath = { root: path.root, tokens: path.tokens.slice(0, i) };
    const want = typeof path.tokens[i] === 'number' ? 'list' : 'map';
    if (i === 0 && path.root.kind === 'object') continue; // the object itself is a map
    const opt = celOptional(prefix);
    parts.push(or([`!${opt}.hasValue()`, `type(dyn(${opt}.value())) == ${want}`]));
  }
  return and(parts);
}

/** What celShape checks, on the JSON side. */
export function shapeHolds(path: FieldPath, base: Found): boolean {
  if (path.root.kind === 'namespace') return true;
  let v: Found = base;
  for (let i = 0; i < path.tokens.length; i++) {
    if (v === ABSENT) return true;
    const t = path.tokens[i];
    if (typeof t === 'number') {
      if (!Array.isArray(v)) return false;
      v = t < v.length ? v[t] : ABSENT;
    } else {
      if (!isJsonObject(v)) return false;
      v = Object.prototype.hasOwnProperty.call(v, t) ? v[t] : ABSENT;
    }
  }
  return true;
}

/** A readable JSONPath-like text for messages. */
export function pathText(path: FieldPath): string {
  const base = path.root.kind === 'object' ? '$' : path.root.kind === 'namespace' ? 'namespaceObject' : '@';
  return base + path.tokens.map((t) => (typeof t === 'number' ? `[${t}]` : `.${t}`)).join('');
}
