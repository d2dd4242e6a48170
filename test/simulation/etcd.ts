import { JsonObject } from '../../util/json';

/** One change of the store, as a watch delivers it. */
export interface StoredEvent {
  rev: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: string;
  object: JsonObject;
}

/** A write lost a compare-and-swap (or the object exists / does not). */
export class StoreConflict extends Error {
  constructor(
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** The key of an object: resource, namespace ('' cluster-wide), name. */
export function keyOf(resource: string, namespace: string, name: string): string {
  return `${resource}/${namespace}/${name}`;
}

/**
 * The cluster's one etcd in the simulation: objects with resourceVersions from one revision counter, compare-and-swap
 * updates (409), and the history of changes the API servers' watch caches feed from (compacted: older watches get 410).
 */
export class Etcd {
  private readonly objects = new Map<string, { resource: string; object: JsonObject }>();
  private readonly history: StoredEvent[] = [];
  private readonly listeners = new Set<(e: StoredEvent) => void>();
  revision = 1;
  compacted = 0;

  /** Told of every change, in order. */
  onEvent(listener: (e: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  get(resource: string, namespace: string, name: string): JsonObject | undefined {
    const o = this.objects.get(keyOf(resource, namespace, name));
    return o ? clone(o.object) : undefined;
  }

  list(resource: string, filter: (o: JsonObject) => boolean = () => true): JsonObject[] {
    return [...this.objects.values()]
      .filter((o) => o.resource === resource && filter(o.object))
      .map((o) => clone(o.object));
  }

  /** Creates (409 when it exists) or updates; `expect` is the resourceVersion the update was read at (CAS). */
  put(resource: string, object: JsonObject, expect?: string | 'create'): JsonObject {
    const meta = object.metadata as JsonObject;
    const key = keyOf(resource, String(meta.namespace ?? ''), String(meta.name));
    const before = this.objects.get(key);
    if (expect === 'create' && before) throw new StoreConflict(409, `${key} already exists`);
    if (expect !== undefined && expect !== 'create') {
      if (!before) throw new StoreConflict(404, `${key} not found`);
      const rv = String((before.object.metadata as JsonObject).resourceVersion);
      if (rv !== expect)
        throw new StoreConflict(409, `${key}: the object has been modified (rv ${expect} < ${rv})`);
    }
    const stored = clone(object);
    (stored.metadata as JsonObject).resourceVersion = String(++this.revision);
    this.objects.set(key, { resource, object: stored });
    this.emit({ rev: this.revision, type: before ? 'MODIFIED' : 'ADDED', resource, object: stored });
    return clone(stored);
  }

  delete(resource: string, namespace: string, name: string): JsonObject {
    const key = keyOf(resource, namespace, name);
    const before = this.objects.get(key);
    if (!before) throw new StoreConflict(404, `${key} not found`);
    this.objects.delete(key);
    const gone = clone(before.object);
    (gone.metadata as JsonObject).resourceVersion = String(++this.revision);
    this.emit({ rev: this.revision, type: 'DELETED', resource, object: gone });
    return clone(gone);
  }

  /** The changes after `rev` (a watch's resume point); null when they were compacted away (410). */
  since(rev: number): StoredEvent[] | null {
    if (rev < this.compacted) return null;
    return this.history.filter((e) => e.rev > rev);
  }

  /** Forgets the history up to now (watches from before answer 410 Gone). */
  compact(): void {
    this.compacted = this.revision;
    this.history.splice(0);
  }

  private emit(e: StoredEvent): void {
    this.history.push(e);
    if (this.history.length > 5000) {
      this.compacted = this.history[1000].rev;
      this.history.splice(0, 1000);
    }
    for (const l of this.listeners) l(e);
  }
}
