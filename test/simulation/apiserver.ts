import { isJsonObject, JsonObject } from '../../util/json';
import {
  KubeApiError,
  KubeClient,
  QueryValue,
  RequestOptions,
  WatchEvent,
  WatchHandle,
} from '../../kube/kube';
import { MUTATING_WEBHOOK_CONFIGURATION } from '../../kube/owned';
import { PROBE_LABEL, PROBE_SEEN_ANNOTATION, probeTokenIn } from '../../scope/probe';
import { labelsOf } from '../../util/meta';
import { Etcd, StoreConflict, StoredEvent } from './etcd';
import { Random } from './random';

/** How an API server of the simulation misbehaves; probabilities per request. */
export interface ApiServerFaults {
  /** A PUT of the webhook configuration answered 409 although nobody wrote (a write the client never saw land). */
  conflict: number;
  /** A PUT of the webhook configuration refused with 422. */
  invalid: number;
  /** Any request answered 503. */
  transient: number;
}

export interface ApiServerOptions {
  name: string;
  etcd: Etcd;
  random: Random;
  /** Delay of its watch cache behind etcd, per event (ms). */
  cacheLag: [number, number];
  /** Delay before it uses a webhook configuration its cache got (ms). */
  loadLag: [number, number];
  faults: ApiServerFaults;
  /** Told of every stored write of the webhook configuration (the write-storm bound). */
  onConfigWrite: () => void;
  /** The schedule's log (details with SIM_DETAIL=1). */
  log?: (line: string) => void;
}

interface Watch {
  resource: string;
  from: number;
  name: string | null;
  onEvent: (e: WatchEvent) => void;
  end: (err?: Error) => void;
}

const ROUTES: Array<[RegExp, string]> = [
  [/^\/apis\/api\.kubemod\.io\/v1beta1(?:\/namespaces\/([^/]+))?\/modrules(?:\/([^/]+))?$/, 'modrules'],
  [
    /^\/apis\/admissionregistration\.k8s\.io\/v1\/mutatingwebhookconfigurations()(?:\/([^/]+))?$/,
    'mutatingwebhookconfigurations',
  ],
  [/^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/, 'events'],
  [/^\/api\/v1\/namespaces()(?:\/([^/]+))?$/, 'namespaces'],
  [/^\/api\/v1\/nodes()(?:\/([^/]+))?$/, 'nodes'],
];

function route(path: string): { resource: string; namespace: string; name: string | null } {
  for (const [re, resource] of ROUTES) {
    const m = re.exec(path);
    if (m)
      return {
        resource,
        namespace: decodeURIComponent(m[1] ?? ''),
        name: m[2] ? decodeURIComponent(m[2]) : null,
      };
  }
  throw new KubeApiError(`404 NotFound: ${path}`, 404, 'NotFound');
}

function nameSelected(query: Record<string, QueryValue> | undefined): string | null {
  const selector = String(query?.fieldSelector ?? '');
  return selector.startsWith('metadata.name=') ? selector.slice('metadata.name='.length) : null;
}

function metaOf(o: JsonObject): JsonObject {
  return isJsonObject(o.metadata) ? o.metadata : {};
}

function after(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * One API server in front of the etcd: a watch cache that gets each change after its own delay (watches are served
 * from it, lists and gets are consistent reads), the webhook configuration it uses, loaded after its own delay, the
 * dry-run probe answered from that configuration, restarts that end every watch, and faults.
 */
export class SimApiServer {
  readonly name: string;
  up = true;
  /** The webhook configuration this API server calls webhooks by (null: none). */
  loaded: JsonObject | null = null;
  /** Whether it answers probe Events with 403 (RBAC taken away, a policy in the way). */
  refusesProbes = false;
  private cacheRev: number;
  private epoch = 0;
  private restarts = 0;
  private lastDelivery = 0;
  private lastLoad = 0;
  private readonly watches = new Set<Watch>();

  constructor(private readonly options: ApiServerOptions) {
    this.name = options.name;
    this.cacheRev = options.etcd.revision;
    this.loaded = this.currentConfiguration();
    options.etcd.onEvent((e) => this.fromEtcd(e));
  }

  private get etcd(): Etcd {
    return this.options.etcd;
  }

  private currentConfiguration(): JsonObject | null {
    return this.etcd.get('mutatingwebhookconfigurations', '', MUTATING_WEBHOOK_CONFIGURATION) ?? null;
  }

  private lag([min, max]: [number, number]): number {
    return this.options.random.between(min, max);
  }

  private fromEtcd(e: StoredEvent): void {
    const epoch = this.epoch;
    const now = Date.now();
    this.lastDelivery = Math.max(this.lastDelivery, now + this.lag(this.options.cacheLag));
    setTimeout(() => {
      if (epoch === this.epoch && this.up) this.deliver(e);
    }, this.lastDelivery - now);
  }

  private deliver(e: StoredEvent): void {
    this.cacheRev = Math.max(this.cacheRev, e.rev);
    for (const w of [...this.watches]) this.send(w, e);
    const name = String(metaOf(e.object).name);
    if (e.resource !== 'mutatingwebhookconfigurations' || name !== MUTATING_WEBHOOK_CONFIGURATION) return;
    const epoch = this.epoch;
    const now = Date.now();
    this.lastLoad = Math.max(this.lastLoad, now + this.lag(this.options.loadLag));
    setTimeout(() => {
      if (epoch !== this.epoch) return;
      this.loaded = e.type === 'DELETED' ? null : e.object;
      if (process.env.SIM_DETAIL)
        this.options.log?.(`${this.name} loads configuration rv ${String(metaOf(e.object).resourceVersion)}`);
    }, this.lastLoad - now);
  }

  private send(w: Watch, e: StoredEvent): void {
    if (e.resource !== w.resource || e.rev <= w.from || e.rev > this.cacheRev) return;
    if (w.name !== null && metaOf(e.object).name !== w.name) return;
    w.from = e.rev;
    w.onEvent({ type: e.type, object: JSON.parse(JSON.stringify(e.object)) as JsonObject });
  }

  /** Goes down for `downMs`: every watch ends, requests fail; back up with a fresh cache (and a compaction). */
  restart(downMs: number, compact: boolean): void {
    this.up = false;
    this.epoch++;
    // A restart while down (overlapping faults) extends the outage: only the latest one comes back up.
    const restart = ++this.restarts;
    for (const w of [...this.watches])
      w.end(new KubeApiError(`watch: ${this.name} went away`, 0, 'ConnectionError'));
    setTimeout(() => {
      if (restart !== this.restarts) return;
      this.epoch++;
      if (compact) this.etcd.compact();
      this.cacheRev = this.etcd.revision;
      this.lastDelivery = this.lastLoad = Date.now();
      // Its webhook configuration informer syncs before it serves.
      this.loaded = this.currentConfiguration();
      this.up = true;
    }, downMs);
  }

  /** A client of this API server (what a replica connected to it uses). */
  client(): KubeClient {
    return {
      request: (method, path, options) => this.request(method, path, options),
      watch: (path, query, onEvent) => this.watch(path, query, onEvent),
    };
  }

  private async request(method: string, path: string, options: RequestOptions = {}): Promise<JsonObject> {
    await after(this.lag([0, 2]));
    if (!this.up)
      throw new KubeApiError(
        `${method} ${path}: connect ECONNREFUSED (${this.name} is down)`,
        0,
        'ConnectionError',
      );
    if (this.options.random.chance(this.options.faults.transient))
      throw new KubeApiError(`503 ServiceUnavailable: ${this.name} is busy`, 503, 'ServiceUnavailable');
    const epoch = this.epoch;
    let result: JsonObject | Error;
    try {
      result = this.handle(method, path, options);
    } catch (err) {
      result =
        err instanceof StoreConflict
          ? new KubeApiError(err.message, err.status, err.status === 409 ? 'Conflict' : 'NotFound')
          : (err as Error);
    }
    await after(this.lag([0, 2]));
    if (epoch !== this.epoch)
      throw new KubeApiError(`${method} ${path}: connection reset`, 0, 'ConnectionError');
    if (result instanceof Error) throw result;
    return result;
  }

  private handle(method: string, path: string, options: RequestOptions): JsonObject {
    const { resource, namespace, name } = route(path);
    if (resource === 'events' && method === 'POST') return this.probe(options);
    if (method === 'GET' && name !== null) {
      const got = this.etcd.get(resource, namespace, name);
      if (!got) throw new KubeApiError(`404 NotFound: ${path}`, 404, 'NotFound');
      return got;
    }
    if (method === 'GET') {
      const selected = nameSelected(options.query);
      const items = this.etcd.list(
        resource,
        (o) =>
          (selected === null || metaOf(o).name === selected) &&
          (!namespace || metaOf(o).namespace === namespace),
      );
      return { metadata: { resourceVersion: String(this.etcd.revision) }, items };
    }
    if (method === 'PUT' && resource === 'mutatingwebhookconfigurations' && isJsonObject(options.body)) {
      const faults = this.options.faults;
      if (this.options.random.chance(faults.conflict))
        throw new KubeApiError('409 Conflict: injected', 409, 'Conflict');
      if (this.options.random.chance(faults.invalid))
        throw new KubeApiError('422 Invalid: injected', 422, 'Invalid');
      const body = options.body;
      const stored = this.etcd.put(resource, body, String(metaOf(body).resourceVersion ?? ''));
      this.options.onConfigWrite();
      return stored;
    }
    throw new KubeApiError(`405 MethodNotAllowed: ${method} ${path}`, 405, 'MethodNotAllowed');
  }

  /** A dry-run Event: marked by the probe webhook when the configuration in use asks for its token. */
  private probe(options: RequestOptions): JsonObject {
    if (this.refusesProbes) throw new KubeApiError('403 Forbidden: events is forbidden', 403, 'Forbidden');
    const event = options.body as JsonObject;
    const token = labelsOf(event)[PROBE_LABEL];
    if (!token || options.query?.dryRun !== 'All' || probeTokenIn(this.loaded) !== token) return event;
    const meta = metaOf(event);
    const annotations = isJsonObject(meta.annotations) ? meta.annotations : {};
    return {
      ...event,
      metadata: { ...meta, annotations: { ...annotations, [PROBE_SEEN_ANNOTATION]: token } },
    };
  }

  private watch(
    path: string,
    query: Record<string, QueryValue>,
    onEvent: (e: WatchEvent) => void,
  ): WatchHandle {
    let settle!: (err?: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      settle = (err) => (err ? reject(err) : resolve());
    });
    let timer: NodeJS.Timeout | null = null;
    let aborted = false;
    const w: Watch = {
      resource: route(path).resource,
      from: Number(query.resourceVersion ?? 0),
      name: nameSelected(query),
      onEvent,
      end: (err) => {
        if (!this.watches.delete(w) && timer === null) return;
        if (timer) clearTimeout(timer);
        timer = null;
        settle(err);
      },
    };
    const epoch = this.epoch;
    setTimeout(
      () => {
        if (aborted) return;
        if (!this.up || epoch !== this.epoch)
          return settle(new KubeApiError(`watch ${path}: connection refused`, 0, 'ConnectionError'));
        const backlog = this.etcd.since(w.from);
        if (backlog === null) {
          onEvent({ type: 'ERROR', object: { code: 410, message: 'too old resource version' } });
          return settle();
        }
        this.watches.add(w);
        timer = setTimeout(() => w.end(), Number(query.timeoutSeconds ?? 300) * 1000);
        for (const e of backlog) this.send(w, e);
      },
      this.lag([0, 2]),
    );
    return {
      done,
      abort: () => {
        aborted = true;
        if (this.watches.has(w) || timer) w.end();
        else settle();
      },
    };
  }
}
