import { isJsonObject, JsonObject } from '../util/json';
import { Logger } from '../util/logger';
import { Backoff, BackoffOptions, sleep } from './backoff';
import { isUnanswered, KubeApiError, KubeClient, WatchEvent } from './kube';
import { messageOf } from '../util/errors';
import { metadataOf } from '../util/meta';

/** What an informer feeds: a full list (initial and every relist), then single changes. */
export interface InformerHandlers {
  replace(items: JsonObject[]): void;
  upsert(obj: JsonObject): void;
  remove(obj: JsonObject): void;
}

/** Handlers that call each of `handlers` in turn (absent ones skipped). */
export function combineHandlers(...handlers: Array<InformerHandlers | null | undefined>): InformerHandlers {
  const all = handlers.filter((h): h is InformerHandlers => !!h);
  return {
    replace: (items) => all.forEach((h) => h.replace(items)),
    upsert: (obj) => all.forEach((h) => h.upsert(obj)),
    remove: (obj) => all.forEach((h) => h.remove(obj)),
  };
}

export interface InformerOptions {
  client: KubeClient;
  /** Collection path, e.g. /api/v1/namespaces or /apis/api.kubemod.io/v1beta1/modrules. */
  path: string;
  /** apiVersion and kind to put on list items (core lists leave them out). */
  apiVersion: string;
  kind: string;
  fieldSelector?: string;
  labelSelector?: string;
  handlers: InformerHandlers;
  logger: Logger;
  backoff?: BackoffOptions;
  /**
   * Retry delays while the API server does not answer at all (connection refused/reset, status 0); default
   * 250 ms doubling to 2 s. Kept short: such a probe costs the server nothing, and a long step here is time
   * spent on stale rules after the server is back.
   */
  reconnect?: BackoffOptions;
  /** Server-side watch timeout; default a random 300-600 s so replicas do not reconnect together. */
  watchTimeoutSeconds?: number;
  /** Items per list page; default 500. */
  pageSize?: number;
  /**
   * Which objects to hold (reference caches keep only what rules name): others are dropped from each list page as it
   * arrives, and a watch event for one is handed on as a removal (it may have been held before a change).
   */
  keep?: (obj: JsonObject) => boolean;
  /** Told about every failed list (the reference caches report a kind that cannot be read). */
  onListError?: (err: unknown) => void;
}

function resourceVersionOf(obj: JsonObject): string | undefined {
  const meta = obj.metadata;
  return isJsonObject(meta) && typeof meta.resourceVersion === 'string' ? meta.resourceVersion : undefined;
}

class ExpiredError extends Error {}

function isExpired(err: unknown): boolean {
  return (
    err instanceof ExpiredError ||
    (err instanceof KubeApiError && (err.status === 410 || err.reason === 'Expired'))
  );
}

/**
 * List + watch of one collection, forever: relists (and replaces everything) after 410 Gone or when it lost
 * track, re-watches from the last seen resourceVersion after normal stream ends, backs off on errors.
 */
export class Informer {
  private readonly controller = new AbortController();
  private watch: { abort(): void } | null = null;
  private loop: Promise<void> | null = null;
  private syncedFlag = false;
  private resolveSynced!: () => void;
  /** Resolves after the first full list has been handed to replace(). */
  readonly synced: Promise<void> = new Promise((r) => (this.resolveSynced = r));
  /** How many full lists have been handed over (tests and metrics). */
  listCount = 0;
  /**
   * The resourceVersion the handlers have caught up with (a list's, then each event's and bookmark's); null before
   * the first list. Set before the handler runs, so a handler (and anything it triggers) reads its own event's.
   */
  resourceVersion: string | null = null;

  constructor(private readonly options: InformerOptions) {}

  /** Starts the list/watch loop (idempotent). */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.controller.abort();
    this.watch?.abort();
    await this.loop;
  }

  hasSynced(): boolean {
    return this.syncedFlag;
  }

  private get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  private async run(): Promise<void> {
    const { logger, path } = this.options;
    const backoff = new Backoff(this.options.backoff);
    const reconnect = new Backoff(this.options.reconnect ?? { initialMs: 250, maxMs: 2000 });
    let resourceVersion: string | null = null;
    let listedAt = 0;
    while (!this.stopped) {
      try {
        if (resourceVersion === null) {
          resourceVersion = await this.list().catch((err: unknown) => {
            this.options.onListError?.(err);
            throw err;
          });
          listedAt = Date.now();
          reconnect.reset();
        }
        const started = Date.now();
        const { lastVersion, events } = await this.watchFrom(resourceVersion);
        resourceVersion = lastVersion;
        reconnect.reset();
        // A stream that ends at once without events is as bad as an error: do not spin on it. Only a watch
        // that worked resets the backoff (a list alone does not: list, 410, list, ... must slow down too).
        if (events === 0 && Date.now() - started < 1000 && !this.stopped)
          await sleep(backoff.next(), this.controller.signal);
        else backoff.reset();
      } catch (err) {
        if (this.stopped) break;
        if (isExpired(err)) {
          logger.info('watch expired; relisting', { path });
          resourceVersion = null;
          // 410 is an answer: the server is up again, so relist now whatever failed before it (an API server
          // restart ends exactly so). Only a 410 straight after a fresh list waits, so it cannot spin.
          if (Date.now() - listedAt > 1000) {
            backoff.reset();
            reconnect.reset();
            continue;
          }
          await sleep(backoff.next(), this.controller.signal);
          continue;
        }
        logger.warn('list/watch failed; retrying', { path, error: messageOf(err) });
        await sleep(isUnanswered(err) ? reconnect.next() : backoff.next(), this.controller.signal);
      }
    }
  }

  /** Lists every page, hands the items to replace() and returns the list's resourceVersion. */
  private async list(): Promise<string> {
    const { client, path, apiVersion, kind, handlers } = this.options;
    const items: JsonObject[] = [];
    let token: string | undefined;
    let version = '';
    do {
      const page = await client.request('GET', path, {
        query: {
          limit: this.options.pageSize ?? 500,
          continue: token,
          fieldSelector: this.options.fieldSelector,
          labelSelector: this.options.labelSelector,
        },
      });
      const meta = metadataOf(page);
      token = typeof meta.continue === 'string' && meta.continue ? meta.continue : undefined;
      if (typeof meta.resourceVersion === 'string') version = meta.resourceVersion;
      const pageItems = Array.isArray(page.items) ? page.items : [];
      const keep = this.options.keep;
      for (const item of pageItems)
        if (isJsonObject(item) && (!keep || keep(item))) items.push({ apiVersion, kind, ...item });
    } while (token && !this.stopped);
    if (this.stopped) return version;
    this.resourceVersion = version || this.resourceVersion;
    this.safely('replace', () => handlers.replace(items));
    this.listCount++;
    if (!this.syncedFlag) {
      this.syncedFlag = true;
      this.resolveSynced();
    }
    return version;
  }

  private async watchFrom(resourceVersion: string): Promise<{ lastVersion: string; events: number }> {
    const { client, path, apiVersion, kind, handlers } = this.options;
    let lastVersion = resourceVersion;
    let events = 0;
    let failure: Error | null = null;
    const timeoutSeconds = this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    const handle = client.watch(
      path,
      {
        resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
        fieldSelector: this.options.fieldSelector,
        labelSelector: this.options.labelSelector,
      },
      (event: WatchEvent) => {
        if (failure) return;
        events++;
        if (event.type === 'ERROR') {
          const code = typeof event.object.code === 'number' ? event.object.code : 0;
          const message = typeof event.object.message === 'string' ? event.object.message : 'watch error';
          failure = code === 410 ? new ExpiredError(message) : new KubeApiError(message, code, 'WatchError');
          handle.abort();
          return;
        }
        const version = resourceVersionOf(event.object);
        if (version) lastVersion = this.resourceVersion = version;
        if (event.type === 'BOOKMARK') return;
        const obj: JsonObject = { apiVersion, kind, ...event.object };
        const dropped = this.options.keep !== undefined && !this.options.keep(obj);
        if (event.type === 'DELETED' || dropped) this.safely('remove', () => handlers.remove(obj));
        else this.safely('upsert', () => handlers.upsert(obj));
      },
    );
    this.watch = handle;
    // stop() may have run while the list or the watch request was on its way.
    if (this.stopped) handle.abort();
    try {
      await handle.done;
    } finally {
      this.watch = null;
    }
    if (failure) throw failure;
    return { lastVersion, events };
  }

  // A handler bug must not kill the loop (and with it every later update).
  private safely(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.logger.error('informer handler failed', {
        path: this.options.path,
        handler: what,
        error: messageOf(err),
      });
    }
  }
}
