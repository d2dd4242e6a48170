import { isJsonObject, JsonObject } from '../util/json';
import { labelsOf, metadataOf, nameOf, namespaceOf, objectKey } from '../util/meta';
import { deeperThan } from '../util/depth';
import type { ReferenceDecl } from '../rule/references';
import type { CompiledRule } from '../rule/compile';
import { asReference } from './manifests';

/*
 * The objects rules read besides their object (named references and owners), held as syntheticRefs injects them
 * (without managedFields and the last-applied annotation). Pure: the operator's informers feed it
 * (operator/references/), offline tools fill it from files. Each feeder owns a partition of a kind, so one
 * feeder's full relist never drops what another holds.
 */

/** Looks up objects the rules read besides their object; synchronous, from caches (the engine's view of them). */
export interface ReferenceReader {
  /** One object by group, kind, namespace ('' for cluster-scoped) and name; undefined when it does not exist. */
  get(group: string, kind: string, namespace: string, name: string): JsonObject | undefined;
  /** The objects a label-selector reference matches, sorted by namespace and name. */
  select(decl: ReferenceDecl): readonly JsonObject[];
}

/**
 * Reference caches a server evaluates against (the operator's informers, or files): the reader, and when the caches
 * cannot answer yet, what to wait for. An admission is never answered from a cache that has not synced.
 */
export interface ReferenceSource {
  readonly reader: ReferenceReader;
  /**
   * A promise, when the caches cannot answer yet what `rules` read for `object` in `namespace` (a watch still
   * listing, an owner not seen yet); undefined when they can. It resolves (never rejects) once they can, or once
   * the answer is known to be "absent" (a kind that cannot be read).
   */
  pending(
    rules: readonly CompiledRule[],
    object: JsonObject,
    namespace: string | null,
  ): Promise<void> | undefined;
}

/** A source that never waits (objects from files, all loaded before the first request). */
export function readySource(reader: ReferenceReader): ReferenceSource {
  return { reader, pending: () => undefined };
}

/** group/Kind, the key a kind is held under (versions of one kind are the same objects). */
export function groupKind(group: string, kind: string): string {
  return `${group}/${kind}`;
}

/** The group of an apiVersion ('' for the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Most objects a label-selector reference lists (the first ones by namespace and name). */
export const MAX_SELECTED = 256;

/** One feeder's objects of one kind, by namespace/name. */
export class ReferencePartition {
  private readonly objects = new Map<string, JsonObject>();

  constructor(
    private readonly changed: () => void,
    /** What is kept of each object (e.g. only metadata, for owners read only by their metadata). */
    private shape: (obj: JsonObject) => JsonObject = (o) => o,
  ) {}

  /** What is kept of objects from now on (those held stay as they are until listed again). */
  reshape(shape: (obj: JsonObject) => JsonObject): void {
    this.shape = shape;
  }

  get size(): number {
    return this.objects.size;
  }

  /** Adds or replaces one object; an object nesting too deeply to evaluate safely is held as absent. */
  upsert(obj: JsonObject): void {
    const key = objectKey(namespaceOf(obj), nameOf(obj));
    if (deeperThan(obj)) this.objects.delete(key);
    else this.objects.set(key, asReference(this.shape(obj)));
    this.changed();
  }

  remove(namespace: string, name: string): void {
    if (this.objects.delete(objectKey(namespace, name))) this.changed();
  }

  /** Replaces everything (a full list). */
  replace(list: readonly JsonObject[]): void {
    this.objects.clear();
    for (const o of list) {
      if (!deeperThan(o)) this.objects.set(objectKey(namespaceOf(o), nameOf(o)), asReference(this.shape(o)));
    }
    this.changed();
  }

  get(namespace: string, name: string): JsonObject | undefined {
    return this.objects.get(objectKey(namespace, name));
  }

  values(): IterableIterator<JsonObject> {
    return this.objects.values();
  }
}

/** Keeps apiVersion, kind and metadata of an object: what owners read only by their metadata need. */
export function metadataOnly(obj: JsonObject): JsonObject {
  const out: JsonObject = { metadata: metadataOf(obj) };
  if (obj.apiVersion !== undefined) out.apiVersion = obj.apiVersion;
  if (obj.kind !== undefined) out.kind = obj.kind;
  return out;
}

/** Every object held for references, by kind; answers the engine's lookups. */
export class ReferenceObjects implements ReferenceReader {
  private readonly kinds = new Map<string, Map<string, ReferencePartition>>();
  // Selector results per kind, namespace and selector, valid until the kind's objects change.
  private readonly selected = new Map<string, readonly JsonObject[]>();
  private readonly versions = new Map<string, number>();
  private readonly listeners = new Set<(groupKind: string, feeder: string) => void>();

  /** Calls `listener` with the group/Kind and feeder after every change of objects; returns the unsubscribe. */
  onChange(listener: (groupKind: string, feeder: string) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The partition `id` of a kind (made on first use); `shape` applies from then on. */
  partition(
    group: string,
    kind: string,
    id: string,
    shape?: (obj: JsonObject) => JsonObject,
  ): ReferencePartition {
    const gk = groupKind(group, kind);
    let parts = this.kinds.get(gk);
    if (!parts) this.kinds.set(gk, (parts = new Map()));
    let part = parts.get(id);
    if (!part) parts.set(id, (part = new ReferencePartition(() => this.changed(gk, id), shape)));
    return part;
  }

  /** Forgets a partition and its objects. */
  drop(group: string, kind: string, id: string): void {
    const gk = groupKind(group, kind);
    if (this.kinds.get(gk)?.delete(id)) this.changed(gk, id);
  }

  get(group: string, kind: string, namespace: string, name: string): JsonObject | undefined {
    const parts = this.kinds.get(groupKind(group, kind));
    if (!parts) return undefined;
    for (const p of parts.values()) {
      const o = p.get(namespace, name);
      if (o) return o;
    }
    return undefined;
  }

  select(decl: ReferenceDecl): readonly JsonObject[] {
    const gk = groupKind(decl.group, decl.kind);
    const key = `${this.versions.get(gk) ?? 0}\n${gk}\n${decl.namespace}\n${decl.selectorKey ?? ''}`;
    let hit = this.selected.get(key);
    if (!hit) {
      hit = this.compute(gk, decl);
      this.selected.set(key, hit);
    }
    return hit;
  }

  /**
   * Replaces what feeder `id` holds across kinds (a reload from files): kinds it no longer has are dropped.
   */
  replaceFeeder(id: string, objects: readonly JsonObject[]): void {
    const byKind = new Map<string, { group: string; kind: string; list: JsonObject[] }>();
    for (const o of objects) {
      if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string') continue;
      const group = groupOf(o.apiVersion);
      const gk = groupKind(group, o.kind);
      let entry = byKind.get(gk);
      if (!entry) byKind.set(gk, (entry = { group, kind: o.kind, list: [] }));
      entry.list.push(o);
    }
    for (const [gk, parts] of this.kinds) if (!byKind.has(gk) && parts.delete(id)) this.changed(gk, id);
    for (const { group, kind, list } of byKind.values()) this.partition(group, kind, id).replace(list);
  }

  /** Objects held, by group/Kind (metrics). */
  counts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [gk, parts] of this.kinds) {
      let n = 0;
      for (const p of parts.values()) n += p.size;
      out.set(gk, n);
    }
    return out;
  }

  private compute(gk: string, decl: ReferenceDecl): readonly JsonObject[] {
    const byKey = new Map<string, JsonObject>();
    for (const p of this.kinds.get(gk)?.values() ?? []) {
      for (const o of p.values()) {
        if (namespaceOf(o) !== decl.namespace || !decl.selector?.matches(labelsOf(o))) continue;
        byKey.set(objectKey(namespaceOf(o), nameOf(o)), o);
      }
    }
    const keys = [...byKey.keys()].sort();
    return Object.freeze(keys.slice(0, MAX_SELECTED).map((k) => byKey.get(k) as JsonObject));
  }

  private changed(gk: string, feeder: string): void {
    this.versions.set(gk, (this.versions.get(gk) ?? 0) + 1);
    // Results of the kind's selectors are stale; others stay (their key has their own kind's version).
    for (const key of this.selected.keys()) if (key.split('\n')[1] === gk) this.selected.delete(key);
    for (const l of this.listeners) l(gk, feeder);
  }
}

/** A reader over manifests (offline tools: objects from files, each held as the cluster would hold it). */
export function referencesFrom(objects: readonly JsonObject[]): ReferenceObjects {
  const refs = new ReferenceObjects();
  refs.replaceFeeder(
    'files',
    objects.filter((o) => isJsonObject(o.metadata)),
  );
  return refs;
}
