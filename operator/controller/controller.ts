import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { BackoffOptions } from '../../kube/backoff';
import { isUnanswered } from '../../kube/kube';
import { Runnable } from './lifecycle';
import { WorkQueue } from './queue';

/*
 * The one shape of an operator controller (as controller-runtime's Reconcile(ctx, Request)): events only queue a key;
 * one worker takes keys off the queue and calls reconcile(key), which brings what the key names to what it should
 * be, idempotently. A reconcile that throws is retried after the key's own backoff; one that asks to be looked at
 * again later says when. No controller keeps timers of its own for retries.
 */

/** What a reconcile asks of the queue when it succeeded. */
export interface ReconcileResult {
  /** Reconcile this key again after so many ms (a probe not answered yet, a settle time, a hold running out). */
  requeueAfter?: number;
}

/** Brings the object a key names to its desired state. */
export interface Reconciler {
  reconcile(key: string): Promise<ReconcileResult | void>;
}

/** Options of a Controller. */
export interface ControllerOptions {
  logger: Logger;
  /** Per-key retry delays after a reconcile threw. */
  backoff?: BackoffOptions;
  /**
   * The longest retry delay after a reconcile the API server did not answer at all (isUnanswered: it restarts, or is
   * unreachable); default the backoff's cap. An API server restart takes seconds: a controller that keeps state in
   * force (the dragnet registration) must not wait out a long backoff once it is back (no watch event says so).
   */
  unansweredMaxMs?: number;
  /** Nothing is reconciled before this settles (a first look at the cluster). */
  ready?: Promise<void>;
  /** Told of every reconcile that threw (metrics); the controller logs it and retries. */
  onError?: (key: string, err: unknown) => void;
  /** The log field that names a key (e.g. 'rule'); default 'key'. */
  keyName?: string;
  /** The warning logged when a reconcile threw; default `<name> reconcile failed; retrying`. */
  errorMessage?: string;
}

/** A reconciler on a work queue, with one worker. */
export class Controller implements Runnable {
  readonly queue: WorkQueue;
  private readonly stopping = new AbortController();
  private worker: Promise<void> | null = null;
  private started = false;
  private isReady = false;
  private unsubscribe: (() => void) | null = null;

  constructor(
    /** What it reconciles, as its log lines name it (e.g. 'native policy'). */
    readonly name: string,
    private readonly reconciler: Reconciler,
    private readonly options: ControllerOptions,
  ) {
    this.queue = new WorkQueue({ backoff: options.backoff });
  }

  /** Reconciles the key soon (once, however often asked before it runs). */
  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** Reconciles the key after `ms` (the earliest time asked for wins). */
  enqueueAfter(key: string, ms: number): void {
    this.queue.addAfter(key, ms);
  }

  /** Reconciles the key once triggers have been quiet for `quietMs`, at most `maxDelayMs` after the first. */
  enqueueDebounced(key: string, quietMs: number, maxDelayMs?: number): void {
    this.queue.addDebounced(key, quietMs, maxDelayMs);
  }

  /** Starts the worker (keys queued before are worked on from now). */
  start(): void {
    if (this.started || this.stopping.signal.aborted) return;
    this.started = true;
    this.unsubscribe = this.queue.onAdd(() => this.kick());
    this.kick();
  }

  /** Stops taking keys and drops pending ones; resolves when the reconcile in progress ended. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.unsubscribe?.();
    this.queue.shutDown();
    await this.idle();
  }

  /** Resolves when no key is queued and none is being reconciled (tests). */
  async idle(): Promise<void> {
    while (this.worker) await this.worker;
  }

  /** Aborted when the controller stops: long reconciles (a probe) end early. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  private kick(): void {
    if (!this.started || this.worker || this.stopping.signal.aborted) return;
    // Started on a later microtask, so that `worker` is set before any reconcile runs (one that queues a key would
    // otherwise start a second worker from inside the first).
    this.worker = Promise.resolve()
      .then(() => this.work())
      .finally(() => {
        this.worker = null;
        if (this.queue.length > 0) this.kick();
      });
  }

  private async work(): Promise<void> {
    if (!this.isReady) {
      await this.untilReady();
      this.isReady = true;
    }
    for (let key = this.queue.take(); key !== undefined; key = this.queue.take()) {
      if (this.stopping.signal.aborted) return;
      await this.run(key);
    }
  }

  /** Resolves when `ready` settled or the controller stops; the stop listener goes with it (one per wait, not per kick). */
  private async untilReady(): Promise<void> {
    if (!this.options.ready) return;
    let done = (): void => undefined;
    const stopped = new Promise<void>((resolve) => (done = resolve));
    this.stopping.signal.addEventListener('abort', done, { once: true });
    try {
      await Promise.race([this.options.ready, stopped]);
    } finally {
      this.stopping.signal.removeEventListener('abort', done);
    }
  }

  private async run(key: string): Promise<void> {
    try {
      const result = await this.reconciler.reconcile(key);
      this.queue.forget(key);
      if (result?.requeueAfter !== undefined) this.queue.addAfter(key, result.requeueAfter);
    } catch (err) {
      if (this.stopping.signal.aborted) return;
      this.options.onError?.(key, err);
      this.options.logger.warn(this.options.errorMessage ?? `${this.name} reconcile failed; retrying`, {
        [this.options.keyName ?? 'key']: key,
        failures: this.queue.failures(key) + 1,
        error: messageOf(err),
      });
      this.queue.addRateLimited(key, isUnanswered(err) ? this.options.unansweredMaxMs : undefined);
    }
  }
}
