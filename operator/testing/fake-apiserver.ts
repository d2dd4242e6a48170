import http, { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import { AddressInfo, Socket } from 'node:net';
import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { JsonPatchOperation } from '../../patch/operation';
import { applyPatch } from '../../patch/rfc6902';
import { ClusterAccess, setHeader } from '../../kube/access';
import { FakeAdmission } from './fake-admission';
import { HttpError, mergePatch, sendError, sendJson } from './fake-http';
import { discoveryOf, FAKE_RESOURCES, FakeResource, Route, routeOf } from './fake-resources';
import { FakeStore, meta } from './fake-store';
import { FakeWatches } from './fake-watches';
import { messageOf } from '../../util/errors';

export { FAKE_RESOURCES, type FakeResource } from './fake-resources';
export { mergePatch } from './fake-http';

/** One request the fake received, for assertions; `at` is when it arrived (Date.now()). */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string;
  body: JsonValue | undefined;
  at: number;
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

/**
 * An in-process Kubernetes API server on 127.0.0.1 for tests: list/watch with resourceVersions, create/replace/
 * patch/delete with conflicts, status subresources, and controls to drop watches, compact history (410 Gone),
 * go down and come back, fail or delay requests, leave an API out. What it serves and how paths route:
 * fake-resources.ts; objects, resourceVersions and write rules: fake-store.ts; watch streams: fake-watches.ts;
 * Status answers: fake-http.ts; admission policies (the operator's probes only): fake-admission.ts.
 */
export class FakeApiServer {
  private readonly watches = new FakeWatches();
  private readonly store = new FakeStore((entry) => this.watches.notify(entry));
  /** The admission policies' answers to the operator's probes (fake-admission.ts); `running` pauses them. */
  readonly admission = new FakeAdmission(this.store);
  /** Resources answered 404 and left out of discovery (an API server without that API). */
  readonly unserved = new Set<FakeResource>();
  private readonly sockets = new Set<Socket>();
  private server: http.Server | https.Server;
  private port = 0;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Optional hook to fail requests. */
  interceptor: Interceptor | null = null;
  /** A mutating webhook step for creates, after the policies (probed-cluster.ts): returns the object to store. */
  webhooks: ((resource: FakeResource, obj: JsonObject) => JsonObject) | null = null;
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
      ? this.store.update(resource, namespace, cloneJson(obj), existing, 'object')
      : this.store.create(resource, namespace, cloneJson(obj));
  }

  /** Deletes an object directly; false when it did not exist. */
  remove(resource: FakeResource, namespace: string | null, name: string): boolean {
    return this.store.remove(resource, namespace, name);
  }

  /** A copy of the stored object. */
  get(resource: FakeResource, namespace: string | null, name: string): JsonObject | undefined {
    return this.store.get(resource, namespace, name);
  }

  /** Copies of every stored object of a resource. */
  list(resource: FakeResource): JsonObject[] {
    return this.store.list(resource);
  }

  /** Ends every open watch stream (a network blip or an API server rolling update). */
  dropWatches(): void {
    this.watches.drop();
  }

  /** Forgets the event history: watches from any version seen so far get 410 Gone. */
  compact(): void {
    this.store.compact();
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
      at: Date.now(),
    };
    try {
      body = text ? (JSON.parse(text) as JsonValue) : undefined;
      recorded.body = body;
    } catch {
      this.requests.push(recorded);
      sendError(res, new HttpError(400, 'BadRequest', 'body is not JSON'));
      return;
    }
    this.requests.push(recorded);
    if (this.token !== null && req.headers.authorization !== `Bearer ${this.token}`) {
      sendError(res, new HttpError(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const injected = this.interceptor?.(recorded);
    if (injected) {
      sendError(res, new HttpError(injected.status, 'Injected', injected.message ?? 'injected failure'));
      return;
    }
    try {
      const discovery = req.method === 'GET' ? discoveryOf(url.pathname, this.unserved) : null;
      if (discovery) return sendJson(res, 200, discovery);
      const route = routeOf(url.pathname, this.unserved);
      this.dispatch(recorded, route, res);
    } catch (err) {
      sendError(res, err instanceof HttpError ? err : new HttpError(500, 'InternalError', messageOf(err)));
    }
  }

  private dispatch(req: RecordedRequest, route: Route, res: ServerResponse): void {
    const def = FAKE_RESOURCES[route.resource];
    if (route.subresource && !(route.subresource === 'status' && def.status)) {
      throw new HttpError(404, 'NotFound', `subresource ${route.subresource} not found`);
    }
    if (route.name === null) this.onCollection(req, route, res);
    else this.onObject(req, { ...route, name: route.name }, res);
  }

  /** A request to a collection: list, watch or create. */
  private onCollection(req: RecordedRequest, route: Route, res: ServerResponse): void {
    const def = FAKE_RESOURCES[route.resource];
    if (req.method === 'GET') {
      if (req.query.watch === 'true' || req.query.watch === '1')
        this.watches.start(this.store, route, req.query, res, this.expiredAs);
      else sendJson(res, 200, this.store.listObjects(route, req.query));
      return;
    }
    if (req.method !== 'POST') throw new HttpError(405, 'MethodNotAllowed', `${req.method} on a collection`);
    if (!isJsonObject(req.body)) throw new HttpError(400, 'BadRequest', 'body must be an object');
    const ns = def.namespaced ? (route.namespace ?? String(meta(req.body).namespace ?? '')) : null;
    if (def.namespaced && !ns) throw new HttpError(400, 'BadRequest', 'namespace required');
    const policed = this.admission.admit(route.resource, cloneJson(req.body));
    const admitted = this.webhooks ? this.webhooks(route.resource, policed) : policed;
    sendJson(res, 201, this.store.create(route.resource, ns, admitted, req.query.dryRun === 'All'));
  }

  /** A request to one object (or its status): read, delete, replace or patch. */
  private onObject(req: RecordedRequest, route: Route & { name: string }, res: ServerResponse): void {
    const existing = this.get(route.resource, route.namespace, route.name);
    if (!existing) throw new HttpError(404, 'NotFound', `${route.resource} "${route.name}" not found`);
    const scope = route.subresource === 'status' ? 'status' : 'main';
    switch (req.method) {
      case 'GET':
        sendJson(res, 200, existing);
        return;
      case 'DELETE':
        this.remove(route.resource, route.namespace, route.name);
        sendJson(res, 200, existing);
        return;
      case 'PUT': {
        if (!isJsonObject(req.body)) throw new HttpError(400, 'BadRequest', 'body must be an object');
        const body = cloneJson(req.body);
        sendJson(res, 200, this.store.update(route.resource, route.namespace, body, existing, scope));
        return;
      }
      case 'PATCH': {
        const patched = patchedObject(existing, req);
        sendJson(res, 200, this.store.update(route.resource, route.namespace, patched, existing, scope));
        return;
      }
      default:
        throw new HttpError(405, 'MethodNotAllowed', String(req.method));
    }
  }
}

/** `existing` with the patch of a PATCH request applied, by its content type (JSON patch, merge or strategic merge). */
function patchedObject(existing: JsonObject, req: RecordedRequest): JsonObject {
  let patched: JsonValue;
  if (req.contentType.startsWith('application/json-patch+json')) {
    try {
      patched = applyPatch(existing, (req.body ?? []) as unknown as JsonPatchOperation[]);
    } catch (err) {
      throw new HttpError(422, 'Invalid', messageOf(err));
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
  return patched;
}
