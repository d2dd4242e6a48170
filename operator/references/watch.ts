import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { nameOf, namespaceOf } from '../../util/meta';
import { ReferencePartition } from '../../store/references';
import { Informer } from '../../kube/informer';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { collectionUrl, ResourceResolver } from './resources';

/*
 * One watch of the reference caches: a kind in one namespace (or all), through an informer, into a cache partition,
 * keeping only the objects asked for. It knows what its content answers (what it last listed with) and wakes the
 * requests waiting for a list to come in. A kind the operator may not read (403), or that is not served, settles as
 * unreadable: requests stop waiting (the objects are absent) and the reason goes to the rules' status.
 */

/** How long before a kind that is not served is looked up again. */
const RETRY_UNSERVED_MS = 30_000;

/** What a watch lists with; `T` is what the caller asks for (names and selectors, or an owner shape). */
export interface WatchTarget<T> {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** '' for all namespaces (or a cluster-scoped kind). */
  readonly namespace: string;
  readonly wants: T;
}

/** What a watch needs from the reference caches. */
export interface WatchDeps {
  client: KubeClient;
  logger: Logger;
  resolver: ResourceResolver;
  /** Called when the watch's state changed (listed, unreadable): statuses are computed again. */
  changed: () => void;
}

/** A running watch of one kind in one namespace. */
export class ReferenceWatch<T> {
  /** What the partition's content answers (the target of the last complete list); undefined before one. */
  listed: T | undefined;
  /** Why the kind cannot be read, while it cannot. */
  unreadable: string | undefined;
  private informer: Informer | null = null;
  private waiters: Array<() => void> = [];
  private stopped = false;
  private starting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private target: WatchTarget<T>,
    private readonly partition: ReferencePartition,
    private readonly keep: (wants: T) => ((obj: JsonObject) => boolean) | undefined,
    private readonly deps: WatchDeps,
  ) {
    this.starting = this.start();
  }

  /** What the running informer lists with. */
  get wants(): T {
    return this.target.wants;
  }

  /** Resolves at the next complete list, or when the kind turns out unreadable (or the watch stops). */
  settled(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Lists again with `wants` (the content keeps answering what it listed with until the new list is in). */
  retarget(wants: T): void {
    this.target = { ...this.target, wants };
    const previous = this.starting;
    this.starting = (async () => {
      await previous;
      const old = this.informer;
      this.informer = null;
      await old?.stop();
      await this.start();
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.wake();
    await this.starting;
    await this.informer?.stop();
  }

  private async start(): Promise<void> {
    if (this.stopped) return;
    const { group, version, kind, namespace, wants } = this.target;
    const found = await this.deps.resolver.resolve(group, version, kind);
    if (this.stopped) return;
    if ('unreadable' in found) {
      // Served later perhaps (a CRD, an aggregated API coming back): look again in a while.
      this.retry = setTimeout(() => {
        this.retry = null;
        this.starting = this.start();
      }, RETRY_UNSERVED_MS);
      this.retry.unref();
      return this.settleUnreadable(found.unreadable, true);
    }
    const informer: Informer = new Informer({
      client: this.deps.client,
      logger: this.deps.logger,
      path: collectionUrl(found.resource, namespace),
      apiVersion: group ? `${group}/${version}` : version,
      kind,
      keep: this.keep(wants),
      onListError: (err) => {
        if (err instanceof KubeApiError && (err.status === 403 || err.status === 404))
          this.settleUnreadable(messageOf(err), err.status === 404);
      },
      handlers: {
        replace: (items) => {
          if (this.informer !== informer) return;
          this.partition.replace(items);
          this.listed = wants;
          this.unreadable = undefined;
          this.wake();
          this.deps.changed();
        },
        upsert: (obj) => {
          if (this.informer === informer) this.partition.upsert(obj);
        },
        remove: (obj) => {
          if (this.informer !== informer) return;
          this.partition.remove(namespaceOf(obj), nameOf(obj));
        },
      },
    });
    this.informer = informer;
    informer.start();
  }

  private settleUnreadable(why: string, notServed: boolean): void {
    const changed = this.unreadable !== why;
    this.unreadable = why;
    // A kind that is not served may be served later (a CRD comes): discovery is read again on the next list.
    if (notServed) this.deps.resolver.forget();
    this.wake();
    if (changed) {
      this.deps.logger.warn('a kind rules read cannot be read; its objects are absent', {
        kind: this.target.kind,
        group: this.target.group,
        namespace: this.target.namespace || '(all)',
        reason: why,
      });
      this.deps.changed();
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
