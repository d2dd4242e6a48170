import { randomUUID } from 'node:crypto';
import http, { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import { AddressInfo, Socket } from 'node:net';
import { cloneJson, isJsonObject, jsonEqual, JsonObject, JsonValue } from '../../util/json';
import { JsonPatchOperation } from '../../patch/operation';
import { applyPatch } from '../../patch/rfc6902';
import { ClusterAccess, setHeader } from '../access';

/** The resources the fake serves, as the real API server names them. */
export const FAKE_RESOURCES = {
  modrules: {
    prefix: '/apis/api.kubemod.io/v1beta1',
    namespaced: true,
    kind: 'ModRule',
    apiVersion: 'api.kubemod.io/v1beta1',
    status: true,
  },
  namespaces: { prefix: '/api/v1', namespaced: false, kind: 'Namespace', apiVersion: 'v1', status: true },
  nodes: { prefix: '/api/v1', namespaced: false, kind: 'Node', apiVersion: 'v1', status: true },
  pods: { prefix: '/api/v1', namespaced: true, kind: 'Pod', apiVersion: 'v1', status: true },
  secrets: { prefix: '/api/v1', namespaced: true, kind: 'Secret', apiVersion: 'v1', status: false },
  events: { prefix: '/api/v1', namespaced: true, kind: 'Event', apiVersion: 'v1', status: false },
  mutatingwebhookconfigurations: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'MutatingWebhookConfiguration',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
  validatingwebhookconfigurations: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'ValidatingWebhookConfiguration',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
} as const;

export type FakeResource = keyof typeof FAKE_RESOURCES;

/** One request the fake received, for assertions. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string;
  body: JsonValue | undefined;
}

/** A test hook's answer: fail the request with this status, or let it through (undefined). */
export type Interceptor = (req: RecordedRequest) => { status: number; message?: string } | undefined;

/** How the fake listens and whom it lets in. */
export interface FakeApiServerOptions {
  /** Serve HTTPS with this certificate instead of plain HTTP. */
  tls?: { cert: string; key: string };
  /** Answer 401 to requests without `Authorization: Bearer <token>`. */
  token?: string;
}

/** The bearer token access() sends. */
export const FAKE_TOKEN = 'test-token';

interface Route {
  resource: FakeResource;
  namespace: string | null;
  name: string | null;
  subresource: string | null;
}

interface HistoryEntry {
  rv: number;
  resource: FakeResource;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: JsonObject;
}

interface OpenWatch {
  route: Route;
  fieldSelector: Record<string, string>;
  res: ServerResponse;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

function keyOf(namespace: string | null, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

function meta(obj: JsonObject): JsonObject {
  if (!isJsonObject(obj.metadata)) obj.metadata = {};
  return obj.metadata as JsonObject;
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return cloneJson(patch);
  const out: JsonObject = isJsonObject(target) ? cloneJson(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

/**
 * An in-process Kubernetes API server on 127.0.0.1 for tests: list/watch with resourceVersions, create/replace/
 * patch/delete with conflicts, status subresources, and controls to drop watches, compact history (410 Gone),
 * go down and come back, fail or delay requests.
 */
export class FakeApiServer {
  private readonly data = new Map<FakeResource, Map<string, JsonObject>>();
  private readonly history: HistoryEntry[] = [];
  private readonly watches = new Set<OpenWatch>();
  private readonly sockets = new Set<Socket>();
  private rv = 100;
  private compactedBefore = 0;
  private server: http.Server | https.Server;
  private port = 0;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Optional hook to fail requests. */
  interceptor: Interceptor | null = null;
  /** Delay before answering each request (slow API server). */
  delayMs = 0;
  /** How an expired watch is reported: an ERROR event in a 200 stream (what the API server does) or a 410 status. */
  expiredAs: 'event' | 'status' = 'event';
  /** The bearer token required of every request (null: none); a test may change it (token rotation). */
  token: string | null;
  private readonly tls: FakeApiServerOptions['tls'];

  private constructor(options: FakeApiServerOptions) {
    this.tls = options.tls;
    this.token = options.token ?? null;
    this.server = this.createServer();
  }

  /** Starts on a free loopback port. */
  static async start(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    const fake = new FakeApiServer(options);
    await fake.listen(0);
    return fake;
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /** Access to this server with a bearer token (the required one, else FAKE_TOKEN) and no CA (plain HTTP). */
  access(): ClusterAccess {
    const token = this.token ?? FAKE_TOKEN;
    return { server: this.url, apply: async (opts) => setHeader(opts, 'Authorization', `Bearer ${token}`) };
  }

  /** Creates or replaces an object directly (bumps resourceVersion, notifies watches). */
  put(resource: FakeResource, obj: JsonObject): JsonObject {
    const m = meta(obj);
    const namespace = FAKE_RESOURCES[resource].namespaced ? String(m.namespace ?? 'default') : null;
    const existing = this.get(resource, namespace, String(m.name));
    return existing
      ? this.update(resource, namespace, cloneJson(obj), existing, false)
      : this.create(resource, namespace, cloneJson(obj));
  }

  /** Deletes an object directly; false when it did not exist. */
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

  /** A copy of the stored object. */
  get(resource: FakeResource, namespace: string | null, name: string): JsonObject | undefined {
    const obj = this.collection(resource).get(keyOf(namespace, name));
    return obj ? cloneJson(obj) : undefined;
  }

  /** Copies of every stored object of a resource. */
  list(resource: FakeResource): JsonObject[] {
    return [...this.collection(resource).values()].map((o) => cloneJson(o));
  }

  /** Ends every open watch stream (a network blip or an API server rolling update). */
  dropWatches(): void {
    for (const w of this.watches) w.res.destroy();
    this.watches.clear();
  }

  /** Forgets the event history: watches from any version seen so far get 410 Gone. */
  compact(): void {
    this.compactedBefore = this.rv + 1;
  }

  /** Number of open watch streams. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** Stops listening and cuts every connection, keeping the data (an API server outage). */
  async goDown(): Promise<void> {
    this.dropWatches();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
    });
  }

  /** Listens again on the same port. */
  async comeUp(): Promise<void> {
    this.server = this.createServer();
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.goDown();
  }

  /** Requests matching a method and a path (a string prefix or a regex). */
  requestsTo(method: string, path: string | RegExp): RecordedRequest[] {
    return this.requests.filter(
      (r) => r.method === method && (typeof path === 'string' ? r.path === path : path.test(r.path)),
    );
  }

  private createServer(): http.Server | https.Server {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    const server = this.tls ? https.createServer(this.tls, handler) : http.createServer(handler);
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return server;
  }

  private listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private collection(resource: FakeResource): Map<string, JsonObject> {
    let m = this.data.get(resource);
    if (!m) this.data.set(resource, (m = new Map()));
    return m;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: JsonValue | undefined;
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: String(req.headers['content-type'] ?? ''),
      body: undefined,
    };
    try {
      body = text ? (JSON.parse(text) as JsonValue) : undefined;
      recorded.body = body;
    } catch {
      this.requests.push(recorded);
      this.sendError(res, new HttpError(400, 'BadRequest', 'body is not JSON'));
      return;
    }
    this.requests.push(recorded);
    if (this.token !== null && req.headers.authorization !== `Bearer ${this.token}`) {
      this.sendError(res, new HttpError(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const injected = this.interceptor?.(recorded);
    if (injected) {
      this.sendError(res, new HttpError(injected.status, 'Injected', injected.message ?? 'injected failure'));
      return;
    }
    try {
      const route = this.route(url.pathname);
      this.dispatch(recorded, route, res);
    } catch (err) {
      this.sendError(
        res,
        err instanceof HttpError ? err : new HttpError(500, 'InternalError', (err as Error).message),
      );
    }
  }

  private route(path: string): Route {
    const entries = Object.entries(FAKE_RESOURCES) as Array<
      [FakeResource, (typeof FAKE_RESOURCES)[FakeResource]]
    >;
    const segsFor = (prefix: string) =>
      path.startsWith(prefix + '/')
        ? path
            .slice(prefix.length + 1)
            .split('/')
            .map(decodeURIComponent)
        : null;
    // Namespaced paths first: /api/v1/namespaces/NS/pods is not the namespace "NS".
    for (const [resource, def] of entries) {
      const segs = segsFor(def.prefix);
      if (segs && def.namespaced && segs[0] === 'namespaces' && segs[2] === resource) {
        return { resource, namespace: segs[1], name: segs[3] ?? null, subresource: segs[4] ?? null };
      }
    }
    for (const [resource, def] of entries) {
      const segs = segsFor(def.prefix);
      if (segs && segs[0] === resource && (!def.namespaced || segs.length === 1)) {
        return { resource, namespace: null, name: segs[1] ?? null, subresource: segs[2] ?? null };
      }
    }
    throw new HttpError(404, 'NotFound', `no route for ${path}`);
  }

  private dispatch(req: RecordedRequest, route: Route, res: ServerResponse): void {
    const def = FAKE_RESOURCES[route.resource];
    if (route.subresource && !(route.subresource === 'status' && def.status)) {
      throw new HttpError(404, 'NotFound', `subresource ${route.subresource} not found`);
    }
    if (req.method === 'GET' && route.name === null) {
      if (req.query.watch === 'true' || req.query.watch === '1') this.startWatch(route, req.query, res);
      else this.sendJson(res, 200, this.listObjects(route, req.query));
      return;
    }
    if (req.method === 'POST' && route.name === null) {
      if (!isJsonObject(req.body)) throw new HttpError(400, 'BadRequest', 'body must be an object');
      const ns = def.namespaced ? (route.namespace ?? String(meta(req.body).namespace ?? '')) : null;
      if (def.namespaced && !ns) throw new HttpError(400, 'BadRequest', 'namespace required');
      this.sendJson(res, 201, this.create(route.resource, ns, cloneJson(req.body)));
      return;
    }
    if (route.name === null) throw new HttpError(405, 'MethodNotAllowed', `${req.method} on a collection`);
    const existing = this.get(route.resource, route.namespace, route.name);
    if (!existing) throw new HttpError(404, 'NotFound', `${route.resource} "${route.name}" not found`);
    const status = route.subresource === 'status';
    switch (req.method) {
      case 'GET':
        this.sendJson(res, 200, existing);
        return;
      case 'DELETE':
        this.remove(route.resource, route.namespace, route.name);
        this.sendJson(res, 200, existing);
        return;
      case 'PUT': {
        if (!isJsonObject(req.body)) throw new HttpError(400, 'BadRequest', 'body must be an object');
        this.sendJson(
          res,
          200,
          this.update(route.resource, route.namespace, cloneJson(req.body), existing, status, def.status),
        );
        return;
      }
      case 'PATCH': {
        let patched: JsonValue;
        if (req.contentType.startsWith('application/json-patch+json')) {
          try {
            patched = applyPatch(existing, (req.body ?? []) as unknown as JsonPatchOperation[]);
          } catch (err) {
            throw new HttpError(422, 'Invalid', (err as Error).message);
          }
        } else if (
          req.contentType.startsWith('application/merge-patch+json') ||
          req.contentType.startsWith('application/strategic-merge-patch+json')
        ) {
          patched = mergePatch(existing, req.body ?? {});
        } else {
          throw new HttpError(415, 'UnsupportedMediaType', `unsupported patch type ${req.contentType}`);
        }
        if (!isJsonObject(patched)) throw new HttpError(422, 'Invalid', 'patch result is not an object');
        this.sendJson(
          res,
          200,
          this.update(route.resource, route.namespace, patched, existing, status, def.status),
        );
        return;
      }
      default:
        throw new HttpError(405, 'MethodNotAllowed', String(req.method));
    }
  }

  private create(resource: FakeResource, namespace: string | null, obj: JsonObject): JsonObject {
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
    m.resourceVersion = String(++this.rv);
    if (resource === 'modrules') m.generation = 1;
    store.set(key, obj);
    this.emit(resource, 'ADDED', obj);
    return cloneJson(obj);
  }

  private update(
    resource: FakeResource,
    namespace: string | null,
    obj: JsonObject,
    existing: JsonObject,
    statusOnly: boolean,
    hasStatus = false,
  ): JsonObject {
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

  private listObjects(route: Route, query: Record<string, string>): JsonObject {
    const def = FAKE_RESOURCES[route.resource];
    const selector = parseFieldSelector(query.fieldSelector);
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

  private startWatch(route: Route, query: Record<string, string>, res: ServerResponse): void {
    const from = query.resourceVersion ? Number(query.resourceVersion) : NaN;
    const fieldSelector = parseFieldSelector(query.fieldSelector);
    if (!Number.isNaN(from) && from !== 0 && from < this.compactedBefore - 1) {
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'Expired',
        code: 410,
        message: `too old resource version: ${from}`,
      };
      if (this.expiredAs === 'status') {
        this.sendJson(res, 410, status);
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ type: 'ERROR', object: status }) + '\n');
      }
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    const watch: OpenWatch = { route, fieldSelector, res };
    if (Number.isNaN(from) || from === 0) {
      for (const o of this.list(route.resource)) if (matches(o, route, fieldSelector)) write(res, 'ADDED', o);
    } else {
      for (const h of this.history) {
        if (h.rv > from && h.resource === route.resource && matches(h.object, route, fieldSelector))
          write(res, h.type, h.object);
      }
    }
    this.watches.add(watch);
    const timeout = Number(query.timeoutSeconds ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : null;
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      this.watches.delete(watch);
    });
  }

  private emit(resource: FakeResource, type: HistoryEntry['type'], obj: JsonObject): void {
    const object = cloneJson(obj);
    this.history.push({ rv: this.rv, resource, type, object });
    for (const w of this.watches) {
      if (w.route.resource === resource && matches(object, w.route, w.fieldSelector))
        write(w.res, type, object);
    }
  }

  private sendJson(res: ServerResponse, status: number, body: JsonValue): void {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private sendError(res: ServerResponse, err: HttpError): void {
    this.sendJson(res, err.status, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: err.reason,
      message: err.message,
      code: err.status,
    });
  }
}

function write(res: ServerResponse, type: string, object: JsonObject): void {
  if (!res.writableEnded) res.write(JSON.stringify({ type, object }) + '\n');
}

function parseFieldSelector(selector: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (selector ?? '').split(',')) {
    const [k, v] = part.split('=');
    if (k && v !== undefined) out[k] = v;
  }
  return out;
}

function matches(obj: JsonObject, route: Route, selector: Record<string, string>): boolean {
  const m = isJsonObject(obj.metadata) ? obj.metadata : {};
  if (
    route.namespace !== null &&
    FAKE_RESOURCES[route.resource].namespaced &&
    m.namespace !== route.namespace
  )
    return false;
  if (selector['metadata.name'] !== undefined && m.name !== selector['metadata.name']) return false;
  if (selector['metadata.namespace'] !== undefined && m.namespace !== selector['metadata.namespace'])
    return false;
  return true;
}
