// Test helper (excluded from the build): an in-memory KubeClient for the audit, with discovery, paginated lists,
// JSON patches (dry run, `test` ops), create/replace/delete, and hooks to fail or change things mid-request.
import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { JsonPatchOperation } from '../../patch/operation';
import { applyPatch } from '../../patch/rfc6902';
import { ListableResource } from '../../audit/types';
import { JSON_PATCH, KubeApiError, KubeClient, RequestOptions, WatchHandle } from '../../kube/kube';
import { messageOf } from '../../util/errors';
import { metadataOf } from '../../util/meta';
import { CORE_RESOURCES } from './fake-cluster-resources';

export { CORE_RESOURCES } from './fake-cluster-resources';

/** A request the fake received. */
export interface FakeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  contentType?: string;
}

/** Runs before a request is answered: throw a KubeApiError to fail it, or change the cluster. */
export type FakeHook = (req: FakeRequest, cluster: FakeCluster) => void | Promise<void>;

const apiVersionOf = (r: ListableResource) => (r.group ? `${r.group}/${r.version}` : r.version);

interface Route {
  resource: ListableResource;
  namespace: string | null;
  name: string | null;
}

function status(code: number, reason: string, message: string, causes?: JsonObject[]): KubeApiError {
  const body: JsonObject = { kind: 'Status', code, reason, message };
  if (causes) body.details = { causes };
  return new KubeApiError(`${code} ${reason}: ${message}`, code, reason, body);
}

/** The cluster: objects by resource, a global resourceVersion, and what was asked of it. */
export class FakeCluster implements KubeClient {
  readonly requests: FakeRequest[] = [];
  readonly hooks: FakeHook[] = [];
  private readonly objects = new Map<ListableResource, Map<string, JsonObject>>();
  private version = 1;

  constructor(readonly resources: ListableResource[] = CORE_RESOURCES) {
    for (const r of resources) this.objects.set(r, new Map());
  }

  private resourceFor(kindOrResource: string): ListableResource {
    const r = this.resources.find((x) => x.kind === kindOrResource || x.resource === kindOrResource);
    if (!r) throw new Error(`fake cluster: no resource ${kindOrResource}`);
    return r;
  }

  /** Stores an object as the API server would (uid, resourceVersion); returns the stored copy. */
  put(object: JsonObject): JsonObject {
    const r = this.resourceFor(String(object.kind));
    const meta = { ...metadataOf(object) };
    meta.uid ??= `uid-${String(meta.namespace ?? '')}-${String(meta.name)}`;
    meta.resourceVersion = String(++this.version);
    const stored: JsonObject = {
      ...cloneJson(object),
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      metadata: meta,
    };
    this.objects.get(r)!.set(`${String(meta.namespace ?? '')}/${String(meta.name)}`, stored);
    return cloneJson(stored);
  }

  /** The stored object, or undefined. */
  get(kind: string, namespace: string, name: string): JsonObject | undefined {
    const found = this.objects.get(this.resourceFor(kind))!.get(`${namespace}/${name}`);
    return found && cloneJson(found);
  }

  /** Every stored object of a kind. */
  all(kind: string): JsonObject[] {
    return [...this.objects.get(this.resourceFor(kind))!.values()].map((o) => cloneJson(o));
  }

  delete(kind: string, namespace: string, name: string): void {
    this.objects.get(this.resourceFor(kind))!.delete(`${namespace}/${name}`);
  }

  private route(path: string): Route | 'discovery' {
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    let group = '';
    let version: string;
    let rest: string[];
    if (parts[0] === 'api') {
      version = parts[1];
      rest = parts.slice(2);
    } else {
      group = parts[1];
      version = parts[2];
      rest = parts.slice(3);
    }
    if (rest.length === 0) return 'discovery';
    let namespace: string | null = null;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const resource = this.resources.find(
      (r) => r.group === group && r.version === version && r.resource === rest[0],
    );
    if (!resource)
      throw status(404, 'NotFound', `the server could not find the requested resource (${path})`);
    return { resource, namespace, name: rest[1] ?? null };
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<JsonObject> {
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) query[k] = String(v);
    const req: FakeRequest = { method, path, query, body: options.body, contentType: options.contentType };
    this.requests.push(req);
    for (const hook of this.hooks) await hook(req, this);
    await Promise.resolve();
    if (path === '/api/v1' || /^\/apis\/[^/]+\/[^/]+$/.test(path)) return this.discovery(path);
    if (path === '/apis') return this.groups();
    const route = this.route(path);
    if (route === 'discovery') return this.discovery(path);
    if (method === 'GET' && route.name === null) return this.list(route, query);
    if (method === 'POST') return this.create(route, options.body as JsonObject);
    return this.onObject(method, route, options, query);
  }

  /** Creates the object of a POST; 409 when it exists. */
  private create(route: Route, body: JsonObject): JsonObject {
    const meta: JsonObject = { ...metadataOf(body) };
    if (route.namespace !== null) meta.namespace = route.namespace;
    if (this.objects.get(route.resource)!.has(`${route.namespace ?? ''}/${String(meta.name)}`))
      throw status(409, 'AlreadyExists', `"${String(meta.name)}" already exists`);
    return this.put({ ...body, metadata: meta });
  }

  /** A request to one stored object: GET, DELETE, PUT (409 on a stale resourceVersion) or a JSON PATCH. */
  private onObject(
    method: string,
    route: Route,
    options: RequestOptions,
    query: Record<string, string>,
  ): JsonObject {
    const store = this.objects.get(route.resource)!;
    const key = `${route.namespace ?? ''}/${route.name ?? ''}`;
    const found = store.get(key);
    if (!found) throw status(404, 'NotFound', `${route.resource.resource} "${route.name}" not found`);
    switch (method) {
      case 'GET':
        return cloneJson(found);
      case 'DELETE':
        store.delete(key);
        return { kind: 'Status', status: 'Success' };
      case 'PUT': {
        const body = options.body as JsonObject;
        const rv = metadataOf(body).resourceVersion;
        if (rv !== metadataOf(found).resourceVersion)
          throw status(
            409,
            'Conflict',
            'the object has been modified; please apply your changes to the latest version',
          );
        return this.put(body);
      }
      case 'PATCH': {
        const patched = jsonPatched(found, options);
        return query.dryRun === 'All' ? patched : this.put(patched);
      }
    }
    throw status(405, 'MethodNotAllowed', method);
  }

  watch(): WatchHandle {
    throw new Error('fake cluster: no watches');
  }

  private list(route: Route, query: Record<string, string>): JsonObject {
    const limit = Number(query.limit ?? 0) || Infinity;
    const start = Number(query.continue ?? 0);
    const selector = query.labelSelector ? query.labelSelector.split(',').map((s) => s.split('=')) : [];
    const items = [...this.objects.get(route.resource)!.values()]
      .filter((o) => route.namespace === null || (o.metadata as JsonObject).namespace === route.namespace)
      .filter((o) => {
        const labels = (metadataOf(o).labels ?? {}) as JsonObject;
        return selector.every(([k, v]) => labels[k] === v);
      })
      .sort((a, b) => (String(metadataOf(a).name) < String(metadataOf(b).name) ? -1 : 1));
    const page = items.slice(start, start + limit).map((o) => {
      // List items carry no apiVersion/kind, as the API server sends them.
      const { apiVersion: _a, kind: _k, ...rest } = cloneJson(o);
      return rest;
    });
    const next = start + limit < items.length ? String(start + limit) : undefined;
    return {
      kind: 'List',
      metadata: { resourceVersion: String(this.version), ...(next ? { continue: next } : {}) },
      items: page,
    };
  }

  private groups(): JsonObject {
    const names = [...new Set(this.resources.filter((r) => r.group).map((r) => r.group))];
    return {
      kind: 'APIGroupList',
      groups: names.map((name) => {
        const version = this.resources.find((r) => r.group === name)!.version;
        return { name, preferredVersion: { groupVersion: `${name}/${version}`, version } };
      }),
    };
  }

  private discovery(path: string): JsonObject {
    const gv = path === '/api/v1' ? 'v1' : path.replace(/^\/apis\//, '');
    return {
      kind: 'APIResourceList',
      groupVersion: gv,
      resources: this.resources
        .filter((r) => apiVersionOf(r) === gv)
        .map((r) => ({
          name: r.resource,
          kind: r.kind,
          namespaced: r.namespaced,
          verbs: [...r.verbs],
          ...(r.shortNames ? { shortNames: [...r.shortNames] } : {}),
        })),
    };
  }
}

/** `found` with the JSON patch of a PATCH applied (415 for another patch type, 422 when it does not apply). */
function jsonPatched(found: JsonObject, options: RequestOptions): JsonObject {
  if (options.contentType !== JSON_PATCH) throw status(415, 'UnsupportedMediaType', 'only JSON patches here');
  let patched: JsonValue;
  try {
    patched = applyPatch(cloneJson(found), options.body as JsonPatchOperation[]);
  } catch (err) {
    // As the API server answers a failed patch: 422, the reason in a cause.
    throw status(422, 'Invalid', 'the server rejected our request due to an error in our request', [
      { type: 'UnexpectedServerResponse', message: messageOf(err) },
    ]);
  }
  if (!isJsonObject(patched)) throw status(422, 'Invalid', 'not an object');
  return patched;
}
