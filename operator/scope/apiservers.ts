import { isJsonObject, JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { isTransient, KubeClient } from '../../kube/kube';
import { ProbeTarget } from './probe';

/** The `kubernetes` Service's EndpointSlices: one address per API server (what kube-proxy spreads the calls over). */
export const APISERVER_SLICES_PATH = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
const SERVICE_LABEL = 'kubernetes.io/service-name=kubernetes';

/** The base URLs of the API servers an EndpointSlice lists (ready, not terminating), on its `https` port. */
export function apiServerUrls(slice: JsonObject): string[] {
  const ports = Array.isArray(slice.ports) ? slice.ports.filter(isJsonObject) : [];
  const port = (ports.find((p) => p.name === 'https') ?? (ports.length === 1 ? ports[0] : undefined))?.port;
  if (typeof port !== 'number') return [];
  const endpoints = Array.isArray(slice.endpoints) ? slice.endpoints.filter(isJsonObject) : [];
  return endpoints.flatMap((e) => {
    const conditions = isJsonObject(e.conditions) ? e.conditions : {};
    if (conditions.ready === false || conditions.terminating === true || !Array.isArray(e.addresses))
      return [];
    return e.addresses
      .filter((a): a is string => typeof a === 'string')
      .map((a) => `https://${a.includes(':') ? `[${a}]` : a}:${port}`);
  });
}

export interface ApiServerTargetsOptions {
  client: KubeClient;
  logger: Logger;
  /** A client of one API server, by its base URL (same credentials, kube/access.ts accessVia). */
  clientFor: (url: string) => KubeClient;
}

/**
 * The API servers to probe one by one (operator/scope/probe.ts): a probe through the operator's own connection
 * proves only the API server that answered it, and the others load a new configuration from their own watches.
 * Read from the `kubernetes` Service's EndpointSlices in `default` (the scope controller refreshes them, key
 * `apiservers`). Where they cannot be read (RBAC, a managed control plane that lists none), the probe goes through
 * the operator's connection alone, as before, and that is logged once.
 */
export class ApiServerTargets {
  private readonly clients = new Map<string, KubeClient>();
  private urls: string[] = [];
  private unreadable: string | null = null;

  constructor(private readonly options: ApiServerTargetsOptions) {}

  /** The API servers listed last, each with its own client. */
  targets(): ProbeTarget[] {
    return this.urls.map((url) => {
      let client = this.clients.get(url);
      if (!client) this.clients.set(url, (client = this.options.clientFor(url)));
      return { name: url, client };
    });
  }

  /** Reads the endpoints again; throws on transient errors (retried by the caller). */
  async refresh(): Promise<void> {
    let list: JsonObject;
    try {
      list = await this.options.client.request('GET', APISERVER_SLICES_PATH, {
        query: { labelSelector: SERVICE_LABEL },
      });
    } catch (err) {
      if (isTransient(err)) throw err;
      const why = messageOf(err);
      if (this.unreadable !== why)
        this.options.logger.warn(
          "cannot read the API servers' endpoints; the dragnet scope is probed through one API server only",
          { error: why },
        );
      this.unreadable = why;
      this.urls = [];
      return;
    }
    this.unreadable = null;
    const items = Array.isArray(list.items) ? list.items.filter(isJsonObject) : [];
    const urls = [...new Set(items.flatMap(apiServerUrls))].sort();
    if (urls.join() !== this.urls.join())
      this.options.logger.info('API servers to probe', { apiServers: urls });
    this.urls = urls;
    for (const url of this.clients.keys()) if (!urls.includes(url)) this.clients.delete(url);
  }
}
