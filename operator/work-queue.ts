import { sleep } from './backoff';

/**
 * Keys worked on one at a time, each queued at most once, in the order they came; work that throws is retried
 * `retryMs` later (`onError` says why). Nothing runs before `ready` resolves, nor after `signal` aborts.
 */
export class KeyedQueue {
  private readonly queue = new Set<string>();
  private working: Promise<void> | null = null;

  constructor(
    private readonly work: (key: string) => Promise<void>,
    private readonly options: {
      ready: Promise<void>;
      signal: AbortSignal;
      onError: (key: string, err: unknown) => void;
      retryMs?: number;
    },
  ) {}

  /** Queues the key (once). */
  add(key: string): void {
    this.queue.add(key);
    this.working ??= this.drain().finally(() => {
      this.working = null;
      if (this.queue.size > 0 && !this.options.signal.aborted) this.add([...this.queue][0]);
    });
  }

  /** Queues the key again after `ms` (unless stopped meanwhile): the one way a key comes back later. */
  requeueAfter(key: string, ms: number): void {
    void sleep(ms, this.options.signal).then(
      () => this.add(key),
      () => undefined,
    );
  }

  /** Resolves when nothing is queued or running. */
  async idle(): Promise<void> {
    while (this.working) await this.working;
  }

  private async drain(): Promise<void> {
    await this.options.ready;
    while (this.queue.size > 0 && !this.options.signal.aborted) {
      const key = this.queue.values().next().value as string;
      this.queue.delete(key);
      try {
        await this.work(key);
      } catch (err) {
        this.options.onError(key, err);
        this.requeueAfter(key, this.options.retryMs ?? 2000);
      }
    }
  }
}
