import { isJsonObject, JsonObject } from '../util/json';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';

/** metadata.name, or undefined when it has none. */
export function nameOf(obj: JsonObject): string | undefined {
  const meta = obj.metadata;
  return isJsonObject(meta) && typeof meta.name === 'string' && meta.name !== '' ? meta.name : undefined;
}

/** Manifests by name, copy-on-write: a map handed to a snapshot is never changed afterwards. */
export class ManifestCache {
  private map = new Map<string, JsonObject>();
  private shared = false;

  /** The current map, for a snapshot; the next write copies it first. */
  share(): ReadonlyMap<string, JsonObject> {
    this.shared = true;
    return this.map;
  }

  /** The current map, to read right away (unlike share(), the next write does not copy it). */
  view(): ReadonlyMap<string, JsonObject> {
    return this.map;
  }

  /** One manifest by name. */
  get(name: string): JsonObject | undefined {
    return this.map.get(name);
  }

  /** Adds or replaces one manifest; false when it has no name. */
  set(obj: JsonObject): boolean {
    const name = nameOf(obj);
    if (name === undefined) return false;
    this.writable().set(name, asReference(obj));
    return true;
  }

  /** Removes one manifest; false when it was not there. */
  delete(name: string): boolean {
    if (!this.map.has(name)) return false;
    this.writable().delete(name);
    return true;
  }

  /** Replaces everything (a full relist). */
  replace(list: readonly JsonObject[]): void {
    this.map = new Map();
    this.shared = false;
    for (const o of list) this.set(o);
  }

  private writable(): Map<string, JsonObject> {
    if (this.shared) {
      this.map = new Map(this.map);
      this.shared = false;
    }
    return this.map;
  }
}

/**
 * The manifest as KubeMod injects it into syntheticRefs: without managedFields and without the
 * last-applied-configuration annotation (noise that only duplicates the manifest). Stored frozen-by-convention.
 */
export function asReference(obj: JsonObject): JsonObject {
  const meta = obj.metadata;
  if (!isJsonObject(meta)) return obj;
  const { managedFields: _managed, ...restMeta } = meta;
  const annotations = restMeta.annotations;
  if (isJsonObject(annotations) && LAST_APPLIED_ANNOTATION in annotations) {
    const { [LAST_APPLIED_ANNOTATION]: _last, ...restAnnotations } = annotations;
    restMeta.annotations = restAnnotations;
  }
  return { ...obj, metadata: restMeta };
}
