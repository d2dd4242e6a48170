import { JsonObject, JsonValue } from '../util/json';
import { cloneValue, hasOwn } from './object';
import { JsonPatchOperation } from './operation';
import { escapeToken } from './pointer';

// Mirrors gomodules.xyz/jsonpatch/v2 CreatePatch, which KubeMod uses for the patch it returns to the
// API server: objects member by member (adds and changes first, then removals), arrays element by
// element with surplus elements removed from the highest index down and new ones added at the end by
// index; a change of type is a replace. Every operation is valid against `from` in order.

/** A minimal RFC 6902 patch turning `from` into `to` (add/remove/replace only); [] when they are equal. */
export function createPatch(from: JsonValue, to: JsonValue): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  diffValues(from, to, '', ops);
  return ops;
}

type Kind = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

function kindOf(v: JsonValue): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as Kind;
}

function diffValues(a: JsonValue, b: JsonValue, path: string, ops: JsonPatchOperation[]): void {
  if (a === b) return; // same primitive or same (shared, unchanged) subtree
  const kind = kindOf(a);
  if (kind !== kindOf(b)) {
    ops.push({ op: 'replace', path, value: cloneValue(b) });
    return;
  }
  if (kind === 'object') diffObjects(a as JsonObject, b as JsonObject, path, ops);
  else if (kind === 'array') diffArrays(a as JsonValue[], b as JsonValue[], path, ops);
  else ops.push({ op: 'replace', path, value: b }); // primitives of the same kind that differ
}

function diffObjects(a: JsonObject, b: JsonObject, path: string, ops: JsonPatchOperation[]): void {
  for (const key of Object.keys(b)) {
    const p = path + '/' + escapeToken(key);
    if (!hasOwn(a, key)) ops.push({ op: 'add', path: p, value: cloneValue(b[key]) });
    else diffValues(a[key], b[key], p, ops);
  }
  for (const key of Object.keys(a)) {
    if (!hasOwn(b, key)) ops.push({ op: 'remove', path: path + '/' + escapeToken(key) });
  }
}

function diffArrays(a: JsonValue[], b: JsonValue[], path: string, ops: JsonPatchOperation[]): void {
  const common = Math.min(a.length, b.length);
  for (let i = a.length - 1; i >= common; i--) ops.push({ op: 'remove', path: `${path}/${i}` });
  for (let i = common; i < b.length; i++)
    ops.push({ op: 'add', path: `${path}/${i}`, value: cloneValue(b[i]) });
  for (let i = 0; i < common; i++) diffValues(a[i], b[i], `${path}/${i}`, ops);
}
