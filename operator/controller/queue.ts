import { Backoff, BackoffOptions } from '../../kube/backoff';

/*
 * The work queue every operator controller runs on (as client-go's rate-limited delaying queue): a key is queued at
 * most once, keys come out in the order they were queued, a key can be queued for later (the earliest time asked
 * for wins), debounced (quiet time, but not forever), or after its own exponential backoff once its work failed.
 */

/** Options of a WorkQueue. */
export interface WorkQueueOptions {
  /** Per-key retry delays after failures; default 200 ms doubling to 30 s, with jitter. */
  backoff?: BackoffOptions;
}

interface Delayed {
  at: number;
  timer: NodeJS.Timeout;
}

/** Keys to work on, each at most once, with delayed, debounced and rate-limited adds. */
export class WorkQueue {
  private readonly queued = new Set<string>();
  private readonly delayed = new Map<string, Delayed>();
  /** Debounced keys: when the first trigger of the current burst came. */
  private readonly bursts = new Map<string, number>();
  private readonly backoffs = new Map<string, Backoff>();
  private readonly listeners = new Set<() => void>();
  private shut = false;

  constructor(private readonly options: WorkQueueOptions = {}) {}

  /** Queues the key now (once). */
  add(key: string): void {
    if (this.shut) return;
    this.clearDelayed(key);
    this.bursts.delete(key);
    if (this.queued.has(key)) return;
    this.queued.add(key);
    for (const l of this.listeners) l();
  }

  /** Queues the key after `ms`; a key already waiting keeps the earlier of the two times. */
  addAfter(key: string, ms: number): void {
    if (this.shut) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const have = this.delayed.get(key);
    if (have && have.at <= at) return;
    this.schedule(key, at);
  }

  /**
   * Queues the key once triggers have been quiet for `quietMs`, but no later than `maxDelayMs` after the first
   * trigger of the burst (changes come in bursts; a steady stream must not hold the work back for ever).
   */
  addDebounced(key: string, quietMs: number, maxDelayMs = Infinity): void {
    if (this.shut || this.queued.has(key)) return;
    const now = Date.now();
    const first = this.bursts.get(key) ?? now;
    this.bursts.set(key, first);
    this.schedule(key, Math.min(now + quietMs, first + maxDelayMs));
  }

  /** Queues the key after its own backoff, at most `capMs` (each call counts one more failure). */
  addRateLimited(key: string, capMs = Infinity): void {
    let backoff = this.backoffs.get(key);
    if (!backoff)
      this.backoffs.set(key, (backoff = new Backoff({ initialMs: 200, ...this.options.backoff })));
    this.addAfter(key, Math.min(backoff.next(), capMs));
  }

  /** The key's work succeeded: its next failure starts from the first delay again. */
  forget(key: string): void {
    this.backoffs.delete(key);
  }

  /** How many times in a row the key's work failed. */
  failures(key: string): number {
    return this.backoffs.get(key)?.failures ?? 0;
  }

  /** Takes the next key, or undefined when none is queued. */
  take(): string | undefined {
    const key = this.queued.values().next().value;
    if (key !== undefined) this.queued.delete(key);
    return key;
  }

  /** Keys queued now (not the delayed ones). */
  get length(): number {
    return this.queued.size;
  }

  /** Whether the key waits for a later time (delayed, debounced or backing off). */
  waiting(key: string): boolean {
    return this.delayed.has(key);
  }

  /** Calls `listener` whenever a key is queued. */
  onAdd(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Drops every key and timer; later adds are ignored. */
  shutDown(): void {
    this.shut = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.queued.clear();
    this.bursts.clear();
  }

  private schedule(key: string, at: number): void {
    this.clearDelayed(key);
    const timer = setTimeout(
      () => {
        this.delayed.delete(key);
        this.add(key);
      },
      Math.max(0, at - Date.now()),
    );
    timer.unref?.();
    this.delayed.set(key, { at, timer });
  }

  private clearDelayed(key: string): void {
    const have = this.delayed.get(key);
    if (have) clearTimeout(have.timer);
    this.delayed.delete(key);
  }
}
