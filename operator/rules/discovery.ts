import { isJsonObject, JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { ResourceCatalog, resourcesOfList } from '../../scope/catalog';
import { ServedResource } from '../../scope/types';
import { Informer } from '../../kube/informer';
import { KubeClient } from '../../kube/kube';
import { messageOf } from '../../util/errors';
import { Controller, ReconcileResult } from '../controller/controller';

/** Discovery as the scope reads it: the current catalog (null until loaded) and its changes. */
export interface CatalogSource {
  catalog(): ResourceCatalog | null;
  onChange(listener: () => void): () => void;
}

export const CRDS_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** The work queue's one key: the catalog. */
const CATALOG = 'catalog';

export interface DiscoveryOptions {
  client: KubeClient;
  logger: Logger;
  /** Quiet time after a CRD change before discovery is read again (CRDs come in bursts); default 500 ms. */
  debounceMs?: number;
  /** Full refresh interval (aggregated APIs come and go without a CRD); default 10 min. */
  refreshMs?: number;
  /** Parallel group-version reads; default 8. */
  concurrency?: number;
}

/**
 * Which resources serve which kinds, from the API server's discovery (GET /api/v1, /apis, /apis/GROUP/VERSION):
 * read at start, again whenever a CustomResourceDefinition appears, changes or goes (an informer on CRDs is the
 * trigger; nothing of them is kept), and every few minutes. A group version that does not answer (an aggregated
 * API that is down) is listed as missing: any kind may live there.
 */
export class Discovery {
  private current: ResourceCatalog | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly crds: Informer;
  private readonly stopping = new AbortController();
  /** Reads discovery: its one key is the catalog (debounced after CRD changes, requeued for the periodic refresh). */
  private readonly work: Controller;

  constructor(private readonly options: DiscoveryOptions) {
    this.work = new Controller(
      'API discovery',
      { reconcile: () => this.refresh() },
      {
        logger: options.logger,
        backoff: { initialMs: 1000, maxMs: 30_000 },
        errorMessage: 'cannot read API discovery; will retry',
      },
    );
    const refresh = () => this.schedule();
    this.crds = new Informer({
      client: options.client,
      logger: options.logger,
      path: CRDS_PATH,
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      // Small pages: a CRD can carry a large schema, and nothing of it is kept.
      pageSize: 50,
      handlers: { replace: refresh, upsert: refresh, remove: refresh },
    });
  }

  /** The catalog read last; null until the first read succeeded. */
  catalog(): ResourceCatalog | null {
    return this.current;
  }

  /** Calls `listener` whenever a read changed the catalog. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  start(): void {
    this.work.start();
    this.crds.start();
    this.work.enqueue(CATALOG);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all([this.crds.stop(), this.work.stop()]);
  }

  private schedule(): void {
    this.work.enqueueDebounced(CATALOG, this.options.debounceMs ?? 500);
  }

  /** Reads discovery once, and again after the refresh interval (a failure throws: retried after a backoff). */
  private async refresh(): Promise<ReconcileResult> {
    this.use(await this.read());
    return { requeueAfter: this.options.refreshMs ?? 10 * 60_000 };
  }

  private use(next: ResourceCatalog): void {
    if (this.current && this.current.fingerprint() === next.fingerprint()) return;
    const first = this.current === null;
    this.current = next;
    this.options.logger.info(first ? 'API discovery loaded' : 'API discovery changed', {
      kinds: next.kinds().length,
      missingGroups: next.missingGroups,
    });
    for (const l of this.listeners) l();
  }

  /** One full read: the core group and every version of every group. */
  async read(): Promise<ResourceCatalog> {
    const { client } = this.options;
    const resources: ServedResource[] = resourcesOfList(await client.request('GET', '/api/v1'));
    const groups = await client.request('GET', '/apis');
    const versions: Array<{ group: string; path: string }> = [];
    for (const g of Array.isArray(groups.groups) ? groups.groups : []) {
      if (!isJsonObject(g) || typeof g.name !== 'string' || !Array.isArray(g.versions)) continue;
      for (const v of g.versions)
        if (isJsonObject(v) && typeof v.groupVersion === 'string')
          versions.push({ group: g.name, path: `/apis/${v.groupVersion}` });
    }
    const missing: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < versions.length && !this.stopping.signal.aborted) {
        const { group, path } = versions[next++];
        try {
          resources.push(...resourcesOfList((await client.request('GET', path)) as JsonObject));
        } catch (err) {
          missing.push(group);
          this.options.logger.debug('discovery of a group version failed', {
            path,
            error: messageOf(err),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: this.options.concurrency ?? 8 }, worker));
    return new ResourceCatalog(resources, missing);
  }
}
