import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isJsonObject, JsonObject } from '../util/json';
import { ClusterAccess } from './access';
import { messageOf } from '../util/errors';

/** An API call that got an error response (or none at all: status 0). */
export class KubeApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string,
    readonly body: JsonObject | null = null,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** One event of a watch stream. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: JsonObject;
}

/** A running watch: done resolves when the server ends the stream (or abort() is called), rejects on errors. */
export interface WatchHandle {
  readonly done: Promise<void>;
  abort(): void;
}

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** Content-Type of the body; default application/json. */
  contentType?: string;
  timeoutMs?: number;
}

/** The few API calls the operator makes; everything else codes against this, not the HTTP details. */
export interface KubeClient {
  request(method: string, path: string, options?: RequestOptions): Promise<JsonObject>;
  watch(path: string, query: Record<string, QueryValue>, onEvent: (event: WatchEvent) => void): WatchHandle;
}

export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';

/** True when the API server did not answer at all (connection refused or reset, timed out): status 0. */
export function isUnanswered(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError && err.status === 0;
}

/** True for errors worth retrying: no response, throttling, server-side failures. */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return true;
  return err.status === 0 || err.status === 429 || err.status >= 500;
}

function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

function statusError(status: number, text: string): KubeApiError {
  let body: JsonObject | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (isJsonObject(parsed)) body = parsed;
  } catch {
    // not a Status object
  }
  const reason =
    body && typeof body.reason === 'string' ? body.reason : (http.STATUS_CODES[status] ?? 'Unknown');
  const message = body && typeof body.message === 'string' ? body.message : text.slice(0, 500);
  return new KubeApiError(`${status} ${reason}: ${message}`, status, reason, body);
}

/**
 * A KubeClient over node:http(s). Authentication and TLS come from the ClusterAccess (the pod's service account, or
 * a kubeconfig through @kubernetes/client-node); the HTTP is ours so watches, timeouts and error statuses behave
 * exactly as the informers need.
 */
export function createKubeClient(access: ClusterAccess): KubeClient {
  const connection = new Connection(access);
  return {
    request: (method, path, options) => requestJson(connection, method, path, options),
    watch: (path, query, onEvent) => new Watch(connection, path, query, onEvent),
  };
}

/** One API server: where it is, how to authenticate, and the keep-alive agent its requests share. */
class Connection {
  private readonly base: URL;
  private readonly plain: boolean;
  private readonly prefix: string;
  // client-node builds a fresh Agent per call: no connection reuse. One keep-alive Agent per TLS identity
  // (client certificates from exec plugins may rotate) keeps handshakes off the pod-binding path.
  private readonly agents = new Map<string, https.Agent>();

  constructor(private readonly access: ClusterAccess) {
    this.base = new URL(access.server);
    this.plain = this.base.protocol === 'http:';
    this.prefix = this.base.pathname.replace(/\/$/, '');
  }

  /** A request to `path` (with its query) made ready to send, authenticated; the caller writes and ends it. */
  async open(method: string, path: string, headers: Record<string, string>): Promise<http.ClientRequest> {
    const opts: https.RequestOptions = { method, headers: { ...headers } };
    await this.access.apply(opts);
    // A kubeconfig's agent is an https.Agent; node:http refuses it for plain-HTTP servers.
    if (this.plain) delete opts.agent;
    // Proxy agents (cluster.proxyUrl) stay as configured.
    else if (!opts.agent || (opts.agent instanceof https.Agent && opts.agent.constructor === https.Agent))
      opts.agent = this.sharedAgent(opts);
    const url = new URL(this.prefix + path, this.base);
    return (this.plain ? http : https).request(url, opts);
  }

  private sharedAgent(opts: https.RequestOptions): https.Agent {
    const identity = [opts.ca, opts.cert, opts.key, opts.pfx, opts.rejectUnauthorized, opts.servername];
    const id = createHash('sha256')
      .update(JSON.stringify(identity.map(String)))
      .digest('hex');
    let agent = this.agents.get(id);
    if (!agent) {
      for (const old of this.agents.values()) old.destroy();
      this.agents.clear();
      agent = new https.Agent({
        keepAlive: true,
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        pfx: opts.pfx,
        passphrase: opts.passphrase,
        rejectUnauthorized: opts.rejectUnauthorized,
        servername: opts.servername,
      });
      this.agents.set(id, agent);
    }
    return agent;
  }
}

/** One API call: the JSON object answered, or a KubeApiError (status 0 when no answer came). */
async function requestJson(
  connection: Connection,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<JsonObject> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'modrule-operator' };
  if (body !== undefined) {
    headers['Content-Type'] = options.contentType ?? 'application/json';
    // Node sends a DELETE body neither chunked nor with a length unless told: the API server answers 400.
    headers['Content-Length'] = String(Buffer.byteLength(body));
  }
  const req = await connection.open(method, path + queryString(options.query), headers);
  return new Promise<JsonObject>((resolve, reject) => {
    req.setTimeout(options.timeoutMs ?? 30_000, () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', (err) =>
      reject(new KubeApiError(`${method} ${path}: ${err.message}`, 0, 'ConnectionError')),
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) =>
        reject(new KubeApiError(`${method} ${path}: ${err.message}`, 0, 'ConnectionError')),
      );
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          reject(statusError(status, text));
          return;
        }
        try {
          const parsed: unknown = text ? JSON.parse(text) : {};
          resolve(isJsonObject(parsed) ? parsed : {});
        } catch (err) {
          reject(new KubeApiError(`${method} ${path}: bad JSON: ${messageOf(err)}`, status, 'BadResponse'));
        }
      });
    });
    req.end(body);
  });
}

/** A watch stream: one event per JSON line, to `onEvent`; over when the server ends it or it is aborted. */
class Watch implements WatchHandle {
  readonly done: Promise<void>;
  private req: http.ClientRequest | null = null;
  private aborted = false;
  private settle: () => void = () => undefined;

  constructor(
    connection: Connection,
    private readonly path: string,
    query: Record<string, QueryValue>,
    private readonly onEvent: (e: WatchEvent) => void,
  ) {
    // Without traffic for this long the connection is presumed dead (a half-open TCP connection never errors).
    const idleMs = (Number(query.timeoutSeconds ?? 300) + 60) * 1000;
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = resolve;
      const fail = (err: Error) => (this.aborted ? resolve() : reject(err));
      connection
        .open('GET', path + queryString({ ...query, watch: true }), { Accept: 'application/json' })
        .then((r) => this.start(r, idleMs, resolve, fail), fail);
    });
  }

  /** An arrow, so that it may be handed around on its own. */
  readonly abort = (): void => {
    this.aborted = true;
    this.req?.destroy();
    // Whatever state the request was in, an aborted watch is over.
    this.settle();
  };

  private start(
    r: http.ClientRequest,
    idleMs: number,
    resolve: () => void,
    fail: (err: Error) => void,
  ): void {
    const path = this.path;
    this.req = r;
    if (this.aborted) {
      r.on('error', () => undefined);
      r.destroy();
      resolve();
      return;
    }
    r.setTimeout(idleMs, () => r.destroy(new Error('watch idle timeout')));
    r.on('error', (err) => fail(new KubeApiError(`watch ${path}: ${err.message}`, 0, 'ConnectionError')));
    r.on('response', (res) => {
      const status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      if (status !== 200) {
        let text = '';
        res.on('data', (c: string) => (text += c));
        res.on('end', () => fail(statusError(status, text)));
        res.on('error', (err) => fail(err));
        return;
      }
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer = this.consume(buffer + chunk, r);
      });
      res.on('end', () => resolve());
      res.on('error', (err) => fail(new KubeApiError(`watch ${path}: ${err.message}`, 0, 'ConnectionError')));
      res.on('close', () =>
        res.complete ? resolve() : fail(new KubeApiError(`watch ${path}: closed`, 0, 'ConnectionError')),
      );
    });
    r.end();
  }

  /** Hands on the events of the whole lines in `buffer`; what is left of it (a line not ended yet). */
  private consume(buffer: string, r: http.ClientRequest): string {
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (!line || this.aborted) continue;
      let event: unknown;
      try {
        event = JSON.parse(line);
      } catch {
        r.destroy(new Error(`watch ${this.path}: bad JSON line`));
        return buffer;
      }
      if (isJsonObject(event) && typeof event.type === 'string' && isJsonObject(event.object)) {
        this.onEvent({ type: event.type as WatchEvent['type'], object: event.object });
      }
    }
    return buffer;
  }
}
