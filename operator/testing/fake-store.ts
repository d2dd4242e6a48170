import { randomUUID } from 'node:crypto';
import { cloneJson, isJsonObject, jsonEqual, JsonObject } from '../../util/json';
import { HttpError } from './fake-http';
import { FAKE_RESOURCES, FakeResource, matches, parseSelector, Route } from './fake-resources';

/** One change to a stored object, as a watch reports it. */
export interface HistoryEntry {
  rv: number;
  resource: FakeResource;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: JsonObject;
}

function keyOf(namespace: string | null, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** The metadata of an object, created empty when missing. */
export function meta(obj: JsonObject): JsonObject {
  if (!isJsonObject(obj.metadata)) obj.metadata = {};
  return obj.metadata as JsonObject;
}

/**
 * What a replace may change: `object`, all of it (a test's own write); `main`, the main resource, whose status stays
 * as it is when the resource has a status subresource; `status`, only the status (the status subresource).
 */
export type WriteScope = 'object' | 'main' | 'status';

/**
 * The fake API server's objects: one collection per resource, a global resourceVersion counter, the event history
 * watches replay from, and the API server's write rules (conflicts, generation, status subresource, no-op writes).
 */
export class FakeStore {
  private readonly data = new Map<FakeResource, Map<string, JsonObject>>();
  /** Every change so far, oldest first. */
  readonly history: HistoryEntry[] = [];
  /** The last resourceVersion handed out. */
  rv = 100;
  /** Watches from a version below this one get 410 Gone. */
  compactedBefore = 0;

  /** @param onChange called after each change, with the history entry it added */
  constructor(private readonly onChange: (entry: HistoryEntry) => void) {}

  /** A copy of the stored object. */
  get(resource: FakeResource, namespace: string | null, name: string): JsonObject | undefined {
    const obj = this.collection(resource).get(keyOf(namespace, name));
    return obj ? cloneJson(obj) : undefined;
  }

  /** Copies of every stored object of a resource. */
  list(resource: FakeResource): JsonObject[] {
    return [...this.collection(resource).values()].map((o) => cloneJson(o));
  }

  /** Deletes an object; false when it did not exist. */
  remove(resource: FakeResource, namespace: string | null, name: string): boolean {
    const store = this.collection(resource);
    const key = keyOf(namespace, name);
    const existing = store.get(key);
    if (!existing) return false;
    store.delete(key);
    const deleted = cloneJson(existing);
    meta(deleted).resourceVersion = String(++this.rv);
    this.emit(resource, 'DELETED', deleted);
    return true;
  }

  /** Forgets the event history: watches from any version seen so far get 410 Gone. */
  compact(): void {
    this.compactedBefore = this.rv + 1;
  }

  /** Stores a new object (name from generateName if needed); 409 when it exists. A dry run stores nothing. */
  create(resource: FakeResource, namespace: string | null, obj: JsonObject, dryRun = false): JsonObject {
    const def = FAKE_RESOURCES[resource];
    const m = meta(obj);
    if (!m.name && typeof m.generateName === 'string') m.name = m.generateName + randomUUID().slice(0, 5);
    if (typeof m.name !== 'string' || !m.name) throw new HttpError(422, 'Invalid', 'metadata.name required');
    const store = this.collection(resource);
    const key = keyOf(namespace, m.name);
    if (store.has(key)) throw new HttpError(409, 'AlreadyExists', `${resource} "${m.name}" already exists`);
    obj.apiVersion = def.apiVersion;
    obj.kind = def.kind;
    if (namespace !== null) m.namespace = namespace;
    m.uid = randomUUID();
    m.creationTimestamp = new Date().toISOString();
    if (resource === 'modrules') m.generation = 1;
    if (dryRun) return cloneJson(obj);
    m.resourceVersion = String(++this.rv);
    store.set(key, obj);
    this.emit(resource, 'ADDED', obj);
    return cloneJson(obj);
  }

  /** Replaces an object (or only its status, as `scope` says); 409 on a stale resourceVersion. */
  update(
    resource: FakeResource,
    namespace: string | null,
    obj: JsonObject,
    existing: JsonObject,
    scope: WriteScope,
  ): JsonObject {
    const statusOnly = scope === 'status';
    const hasStatus = scope === 'main' && FAKE_RESOURCES[resource].status;
    const m = meta(obj);
    const old = meta(existing);
    if (m.resourceVersion !== undefined && m.resourceVersion !== old.resourceVersion) {
      throw new HttpError(
        409,
        'Conflict',
        `the object has been modified; please apply your changes to the latest version`,
      );
    }
    let next: JsonObject;
    if (statusOnly) {
      next = cloneJson(existing);
      if (obj.status === undefined) delete next.status;
      else next.status = obj.status;
    } else {
      next = obj;
      // With a status subresource, writes to the main resource cannot change status.
      if (hasStatus) {
        if (existing.status === undefined) delete next.status;
        else next.status = cloneJson(existing.status);
      }
      const nm = meta(next);
      nm.uid = old.uid;
      nm.creationTimestamp = old.creationTimestamp;
      nm.name = old.name;
      if (namespace !== null) nm.namespace = namespace;
      if (old.generation !== undefined) {
        nm.generation = jsonEqual(existing.spec ?? null, next.spec ?? null)
          ? old.generation
          : Number(old.generation) + 1;
      }
    }
    next.apiVersion = existing.apiVersion;
    next.kind = existing.kind;
    const nm = meta(next);
    nm.resourceVersion = old.resourceVersion;
    // No-op writes do not bump the resourceVersion or notify watches, as with the real API server.
    if (jsonEqual(next, existing)) return cloneJson(existing);
    nm.resourceVersion = String(++this.rv);
    this.collection(resource).set(keyOf(namespace, String(nm.name)), next);
    this.emit(resource, 'MODIFIED', next);
    return cloneJson(next);
  }

  /** A list response for a route, filtered by its `fieldSelector`. */
  listObjects(route: Route, query: Record<string, string>): JsonObject {
    const def = FAKE_RESOURCES[route.resource];
    const selector = parseSelector(query);
    const items = this.list(route.resource)
      .filter((o) => matches(o, route, selector))
      .map((o) => {
        // Core lists carry no apiVersion/kind on items; CRD lists do.
        if (def.prefix === '/api/v1') {
          delete o.apiVersion;
          delete o.kind;
        }
        return o;
      });
    return {
      apiVersion: def.apiVersion,
      kind: `${def.kind}List`,
      metadata: { resourceVersion: String(this.rv) },
      items,
    };
  }

  private collection(resource: FakeResource): Map<string, JsonObject> {
    let m = this.data.get(resource);
    if (!m) this.data.set(resource, (m = new Map()));
    return m;
  }

  private emit(resource: FakeResource, type: HistoryEntry['type'], obj: JsonObject): void {
    const entry: HistoryEntry = { rv: this.rv, resource, type, object: cloneJson(obj) };
    this.history.push(entry);
    this.onChange(entry);
  }
}
