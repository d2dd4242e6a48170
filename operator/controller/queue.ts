/**
 * Keys worked on one at a time, each queued at most once, in the order they came; work that throws is retried
 * `retryMs` later (`onError` says why). Nothing runs before `ready` resolves, nor after `signal` aborts.
 */
export class KeyedQueue {
  private readonly queue = new Set<string>();
  private working: Promise<void> | null = null;
  /** Keys waiting to be queued again: when, and the timer that does it (one per key, the earliest asked for). */
  private readonly waiting = new Map<string, { at: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly work: (key: string) => Promise<void>,
    private readonly options: {
      ready: Promise<void>;
      signal: AbortSignal;
      onError: (key: string, err: unknown) => void;
      retryMs?: number;
    },
  ) {
    options.signal.addEventListener('abort', () => {
      for (const { timer } of this.waiting.values()) clearTimeout(timer);
      this.waiting.clear();
    });
  }

  /** Queues the key (once). */
  add(key: string): void {
    this.queue.add(key);
    this.working ??= this.drain().finally(() => {
      this.working = null;
      if (this.queue.size > 0 && !this.options.signal.aborted) this.add([...this.queue][0]);
    });
  }

  /**
   * Queues the key again after `ms` (unless stopped meanwhile): the one way a key comes back later. A key already
   * waiting keeps the earlier of the two times, so the work that asks again each time it runs (a probe, a settle
   * wait) does not add a timer per run.
   */
  requeueAfter(key: string, ms: number): void {
    if (this.options.signal.aborted) return;
    const at = Date.now() + ms;
    const have = this.waiting.get(key);
    if (have && have.at <= at) return;
    clearTimeout(have?.timer);
    const timer = setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, ms);
    this.waiting.set(key, { at, timer });
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
