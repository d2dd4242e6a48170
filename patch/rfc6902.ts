import { JsonObject, JsonValue, jsonEqual } from '../util/json';
import { cloneValue, getOwn, hasOwn, setOwn } from './object';
import { JsonPatchOperation, PatchError } from './operation';
import { parsePointer } from './pointer';

// Strict RFC 6902, as the API server applies a webhook's patch: parents must exist, array indices
// are canonical decimals, '-' only appends, and nothing is created implicitly.

type Container = JsonObject | JsonValue[];

/** Applies an RFC 6902 patch to a copy of doc and returns it; throws PatchError naming the op index and path. */
export function applyPatch(doc: JsonValue, ops: readonly JsonPatchOperation[]): JsonValue {
  let root = cloneValue(doc);
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    try {
      root = applyOne(root, op);
    } catch (e) {
      if (!(e instanceof PatchError)) throw e;
      const label = typeof op?.op === 'string' ? op.op : '?';
      const path = typeof op?.path === 'string' ? op.path : '';
      throw new PatchError(`operation ${i} (${label} ${JSON.stringify(path)}): ${e.message}`, e.path, i);
    }
  }
  return root;
}

function applyOne(root: JsonValue, op: JsonPatchOperation): JsonValue {
  if (op === null || typeof op !== 'object') throw new PatchError('operation is not an object', '');
  if (typeof op.path !== 'string') throw new PatchError('"path" must be a string', '');
  const opPath = op.path;
  const path = parsePointer(opPath);
  switch (op.op) {
    case 'add':
      return addAt(root, path, cloneValue(requireValue(op)), op.path);
    case 'remove':
      return removeAt(root, path, op.path);
    case 'replace': {
      const value = cloneValue(requireValue(op));
      if (path.length === 0) return value;
      const { parent, key } = locate(root, path, op.path, false);
      if (Array.isArray(parent)) parent[key as number] = value;
      else setOwn(parent, key as string, value);
      return root;
    }
    case 'move': {
      const from = requireFrom(op);
      const fromTokens = parsePointer(from);
      if (op.path !== from && op.path.startsWith(from + '/')) {
        throw new PatchError(`cannot move ${from} into its own child ${op.path}`, op.path);
      }
      const value = valueAt(root, fromTokens, from);
      if (op.path === from) return root;
      root = removeAt(root, fromTokens, from);
      return addAt(root, path, value, op.path);
    }
    case 'copy': {
      const from = requireFrom(op);
      return addAt(root, path, cloneValue(valueAt(root, parsePointer(from), from)), op.path);
    }
    case 'test': {
      const expected = requireValue(op);
      const actual = valueAt(root, path, op.path);
      if (!jsonEqual(actual, expected)) throw new PatchError(`test failed at ${op.path}`, op.path);
      return root;
    }
    default:
      throw new PatchError(`unsupported operation "${String((op as { op: unknown }).op)}"`, opPath);
  }
}

function requireValue(op: JsonPatchOperation): JsonValue {
  const value = (op as { value?: JsonValue }).value;
  if (value === undefined) throw new PatchError(`"${op.op}" needs a "value"`, op.path);
  return value;
}

function requireFrom(op: JsonPatchOperation): string {
  const from = (op as { from?: unknown }).from;
  if (typeof from !== 'string') throw new PatchError(`"${op.op}" needs a string "from"`, op.path);
  return from;
}

function isContainer(v: JsonValue | undefined): v is Container {
  return typeof v === 'object' && v !== null;
}

/** Canonical RFC 6901 array index ('0' or no leading zero), or null. */
function arrayIndex(token: string): number | null {
  return /^(0|[1-9]\d{0,15})$/.test(token) ? Number(token) : null;
}

/** The container that must hold the last token; throws when any parent is missing or a scalar. */
function parentOf(root: JsonValue, tokens: readonly string[], path: string): Container {
  let doc = root;
  for (let i = 0; i < tokens.length - 1; i++) {
    if (!isContainer(doc)) throw new PatchError(`path ${path} does not exist`, path);
    const t = tokens[i];
    let next: JsonValue | undefined;
    if (Array.isArray(doc)) {
      const idx = arrayIndex(t);
      next = idx !== null && idx < doc.length ? doc[idx] : undefined;
    } else {
      next = getOwn(doc, t);
    }
    if (next === undefined) throw new PatchError(`path ${path} does not exist`, path);
    doc = next;
  }
  if (!isContainer(doc)) throw new PatchError(`path ${path} does not exist`, path);
  return doc;
}

/** Parent and key of an existing (or, for add, insertable) location. */
function locate(
  root: JsonValue,
  tokens: readonly string[],
  path: string,
  forAdd: boolean,
): { parent: Container; key: string | number } {
  const parent = parentOf(root, tokens, path);
  const token = tokens[tokens.length - 1];
  if (!Array.isArray(parent)) {
    if (!forAdd && !hasOwn(parent, token)) throw new PatchError(`path ${path} does not exist`, path);
    return { parent, key: token };
  }
  if (forAdd && token === '-') return { parent, key: parent.length };
  const idx = arrayIndex(token);
  if (idx === null) throw new PatchError(`"${token}" is not a valid array index in ${path}`, path);
  if (forAdd ? idx > parent.length : idx >= parent.length) {
    throw new PatchError(`index ${idx} is out of range in ${path} (array of ${parent.length})`, path);
  }
  return { parent, key: idx };
}

function valueAt(root: JsonValue, tokens: readonly string[], path: string): JsonValue {
  if (tokens.length === 0) return root;
  const { parent, key } = locate(root, tokens, path, false);
  return Array.isArray(parent) ? parent[key as number] : (parent[key as string] as JsonValue);
}

function addAt(root: JsonValue, tokens: readonly string[], value: JsonValue, path: string): JsonValue {
  if (tokens.length === 0) return value;
  const { parent, key } = locate(root, tokens, path, true);
  if (Array.isArray(parent)) parent.splice(key as number, 0, value);
  else setOwn(parent, key as string, value);
  return root;
}

function removeAt(root: JsonValue, tokens: readonly string[], path: string): JsonValue {
  if (tokens.length === 0) throw new PatchError('cannot remove the whole document', path);
  const { parent, key } = locate(root, tokens, path, false);
  if (Array.isArray(parent)) parent.splice(key as number, 1);
  else delete parent[key as string];
  return root;
}
