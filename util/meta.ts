import { isJsonObject, JsonObject } from './json';

// One accessor for object metadata, so that no file repeats `isJsonObject(x.metadata) ? x.metadata : {}`.

const EMPTY: JsonObject = Object.freeze({}) as JsonObject;

/** The object's metadata, or a frozen empty object when it has none (never written through). */
export function metadataOf(obj: JsonObject | null | undefined): JsonObject {
  const meta = obj?.metadata;
  return isJsonObject(meta) ? meta : EMPTY;
}

/** metadata.name, or '' when absent or not a string. */
export function nameOf(obj: JsonObject | null | undefined): string {
  const name = metadataOf(obj).name;
  return typeof name === 'string' ? name : '';
}

/** metadata.namespace, or '' when absent (cluster-scoped) or not a string. */
export function namespaceOf(obj: JsonObject | null | undefined): string {
  const namespace = metadataOf(obj).namespace;
  return typeof namespace === 'string' ? namespace : '';
}

/** A string field of metadata (uid, resourceVersion, generateName...), or '' when absent or not a string. */
export function metaString(obj: JsonObject | null | undefined, field: string): string {
  const v = metadataOf(obj)[field];
  return typeof v === 'string' ? v : '';
}

/** metadata.generation, or undefined. */
export function generationOf(obj: JsonObject | null | undefined): number | undefined {
  const g = metadataOf(obj).generation;
  return typeof g === 'number' ? g : undefined;
}

/** The string values of a metadata map (labels, annotations); non-string values are left out. */
function stringMap(value: unknown): Record<string, string> {
  if (!isJsonObject(value)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) if (typeof v === 'string') out[k] = v;
  return out;
}

/** metadata.labels as strings ({} when absent). */
export function labelsOf(obj: JsonObject | null | undefined): Record<string, string> {
  return stringMap(metadataOf(obj).labels);
}

/** metadata.annotations as strings ({} when absent). */
export function annotationsOf(obj: JsonObject | null | undefined): Record<string, string> {
  return stringMap(metadataOf(obj).annotations);
}

/** The store key of an object: `namespace/name`, or `name` for a cluster-scoped one (as client-go's MetaNamespaceKeyFunc). */
export function keyOf(obj: JsonObject | null | undefined): string {
  return objectKey(namespaceOf(obj), nameOf(obj));
}

/** The key for a namespace and name: `namespace/name`, or `name` when namespace is ''. */
export function objectKey(namespace: string, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The namespace and name a key stands for (the inverse of objectKey). */
export function splitKey(key: string): { namespace: string; name: string } {
  const at = key.indexOf('/');
  return at < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, at), name: key.slice(at + 1) };
}
