import { JsonObject, JsonValue } from '../util/json';
import { cloneValue, getOwn, hasOwn, setOwn } from './object';
import { PatchError } from './operation';
import { formatPointer } from './pointer';

// KubeMod applies ModRule patches with evanphx/json-patch v5 and these options
// (kubemod core/modrulestore.go, jsonPatchApplyOptions):
//   SupportNegativeIndices: true, EnsurePathExistsOnAdd: true, AllowMissingPathOnRemove: true.
// This file mirrors that library's behaviour under those options, working in place on parsed JSON.

/** Longest run of nulls an add may pad an array with (KubeMod has no limit; a rule must not exhaust memory). */
export const MAX_ARRAY_PADDING = 1000;

type Container = JsonObject | JsonValue[];

/** Applies one ModRule patch operation in place, KubeMod style; returns the (possibly new) root. Throws PatchError. */
export function applyKubeModOperation(
  root: JsonValue,
  op: 'add' | 'replace' | 'remove',
  tokens: readonly string[],
  value?: JsonValue,
): JsonValue {
  switch (op) {
    case 'add':
      return add(root, tokens, value === undefined ? null : value);
    case 'replace':
      return replace(root, tokens, value === undefined ? null : value);
    case 'remove':
      return remove(root, tokens);
    default:
      throw new PatchError(`unsupported operation "${String(op)}"`, formatPointer(tokens));
  }
}

// The path is formatted only when an operation fails: applying one never needs it.
function failure(op: 'add' | 'replace' | 'remove', tokens: readonly string[], why: string): PatchError {
  const path = formatPointer(tokens);
  return new PatchError(`cannot ${op} ${path}: ${why}`, path);
}

function isContainer(v: JsonValue | undefined): v is Container {
  return typeof v === 'object' && v !== null;
}

function describe(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Go strconv.Atoi: optional sign and decimal digits; null when not an integer. */
function atoi(token: string): number | null {
  if (!/^[+-]?\d{1,18}$/.test(token)) return null;
  const n = Number(token);
  return n === 0 ? 0 : n; // no -0
}

/** Reads a child the way evanphx's get does (negative indices count from the end); undefined if absent. */
function getChild(doc: Container, key: string): JsonValue | undefined {
  if (!Array.isArray(doc)) return getOwn(doc, key);
  let idx = atoi(key);
  if (idx === null) return undefined;
  if (idx < 0) {
    if (idx < -doc.length) return undefined;
    idx += doc.length;
  }
  return idx < doc.length ? doc[idx] : undefined;
}

/** The container holding the last token, or undefined when a parent is missing, null or a scalar. */
function findParent(root: JsonValue, tokens: readonly string[]): Container | undefined {
  if (!isContainer(root)) return undefined;
  let doc: Container = root;
  for (let i = 0; i < tokens.length - 1; i++) {
    const next = getChild(doc, tokens[i]);
    if (!isContainer(next)) return undefined;
    doc = next;
  }
  return doc;
}

/** evanphx's add on a container: objects set the member, arrays insert ('-' and index -1 append). */
function insertChild(doc: Container, key: string, value: JsonValue, tokens: readonly string[]): void {
  if (!Array.isArray(doc)) {
    setOwn(doc, key, value);
    return;
  }
  if (key === '-') {
    doc.push(value);
    return;
  }
  let idx = atoi(key);
  if (idx === null) throw failure('add', tokens, `"${key}" is not an array index`);
  const size = doc.length + 1;
  if (idx >= size || idx < -size) {
    throw failure('add', tokens, `index ${idx} is out of range for an array of ${doc.length}`);
  }
  // Negative indices count from the end of the array as it will be after the insert: -1 appends.
  if (idx < 0) idx += size;
  doc.splice(idx, 0, value);
}

function padArray(arr: JsonValue[], length: number, tokens: readonly string[]): void {
  if (length - arr.length > MAX_ARRAY_PADDING) {
    throw failure('add', tokens, `index ${length} is too far past the end of the array`);
  }
  while (arr.length < length) arr.push(null);
}

function add(root: JsonValue, tokens: readonly string[], value: JsonValue): JsonValue {
  if (tokens.length === 0) {
    if (!isContainer(value))
      throw new PatchError(`cannot add the whole document: value is ${describe(value)}`, '');
    return cloneValue(value);
  }
  if (!isContainer(root)) throw failure('add', tokens, `the document is ${describe(root)}`);
  let doc: Container = root;
  // Everything below the first container created is new, so undoing that first change restores the document.
  let undo: (() => void) | undefined;
  try {
    // EnsurePathExistsOnAdd: create missing (or null) parents, an array when the next token is an index.
    for (let i = 0; i < tokens.length - 1; i++) {
      const part = tokens[i];
      const target = getChild(doc, part);
      if (isContainer(target)) {
        doc = target;
        continue;
      }
      if (target !== undefined && target !== null) {
        const at = formatPointer(tokens.slice(0, i + 1));
        throw failure('add', tokens, `${at} is ${describe(target)}, not an object or array`);
      }
      if (undo === undefined) undo = undoFor(doc, part);
      if (Array.isArray(doc)) {
        const idx = atoi(part);
        if (idx !== null && idx > doc.length) padArray(doc, idx, tokens);
      }
      const next = tokens[i + 1];
      const nextIdx = atoi(next);
      let created: Container;
      if (nextIdx !== null || next === '-') {
        let length = nextIdx ?? 0;
        if (length < 0) {
          if (length < -1) {
            throw failure('add', tokens, `cannot create an array for negative index ${length}`);
          }
          length = 0;
        }
        created = [];
        padArray(created, length, tokens);
      } else {
        created = {};
      }
      insertChild(doc, part, created, tokens);
      doc = created;
    }
    insertChild(doc, tokens[tokens.length - 1], cloneValue(value), tokens);
  } catch (e) {
    undo?.();
    throw e;
  }
  return root;
}

/** Restores doc[key] (and the array's length and order) as it is now. */
function undoFor(doc: Container, key: string): () => void {
  if (Array.isArray(doc)) {
    const snapshot = doc.slice();
    return () => {
      doc.length = 0;
      for (const v of snapshot) doc.push(v);
    };
  }
  const had = hasOwn(doc, key);
  const old = doc[key];
  return () => {
    if (had) setOwn(doc, key, old);
    else delete doc[key];
  };
}

function replace(root: JsonValue, tokens: readonly string[], value: JsonValue): JsonValue {
  if (tokens.length === 0) {
    if (!isContainer(value)) {
      throw new PatchError(`cannot replace the whole document: value is ${describe(value)}`, '');
    }
    return cloneValue(value);
  }
  const doc = findParent(root, tokens);
  if (doc === undefined) throw failure('replace', tokens, `the path does not exist`);
  const key = tokens[tokens.length - 1];
  if (!Array.isArray(doc)) {
    if (!hasOwn(doc, key)) throw failure('replace', tokens, `the path does not exist`);
    setOwn(doc, key, cloneValue(value));
    return root;
  }
  let idx = atoi(key);
  if (idx === null) throw failure('replace', tokens, `"${key}" is not an array index`);
  if (idx < 0 && idx >= -doc.length) idx += doc.length;
  if (idx < 0 || idx >= doc.length) {
    throw failure('replace', tokens, `index ${key} is out of range for an array of ${doc.length}`);
  }
  doc[idx] = cloneValue(value);
  return root;
}

function remove(root: JsonValue, tokens: readonly string[]): JsonValue {
  // AllowMissingPathOnRemove: anything missing along the way makes the remove a no-op.
  if (tokens.length === 0) return root;
  const doc = findParent(root, tokens);
  if (doc === undefined) return root;
  const key = tokens[tokens.length - 1];
  if (!Array.isArray(doc)) {
    if (hasOwn(doc, key)) delete doc[key];
    return root;
  }
  let idx = atoi(key);
  if (idx === null) {
    throw failure('remove', tokens, `"${key}" is not an array index`);
  }
  if (idx < 0) {
    if (idx < -doc.length) return root;
    idx += doc.length;
  }
  if (idx < doc.length) doc.splice(idx, 1);
  return root;
}
