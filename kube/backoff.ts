export interface BackoffOptions {
  /** First delay; default 500 ms. */
  initialMs?: number;
  /** Cap; default 30 s. */
  maxMs?: number;
  /** Random source in [0, 1); injectable for tests. */
  random?: () => number;
}

/** Exponential backoff with jitter: delays grow 2x per failure up to the cap, each randomised to [d/2, d). */
export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 500;
    this.maxMs = options.maxMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  /** The delay before the next retry; each call counts as one more failure. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    // Jitter keeps replicas that failed together from retrying in lockstep against a recovering API server.
    return Math.round(ceiling / 2 + (ceiling / 2) * this.random());
  }

  /** Back to the first delay after a success. */
  reset(): void {
    this.attempt = 0;
  }

  get failures(): number {
    return this.attempt;
  }
}

/** Resolves after ms, or early when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Runs fn, retrying transient failures with backoff; rethrows the last error or any non-transient one. */
export async function retry<T>(
  fn: () => Promise<T>,
  options: {
    attempts: number;
    isTransient: (err: unknown) => boolean;
    backoff?: BackoffOptions;
    signal?: AbortSignal;
  },
): Promise<T> {
  const backoff = new Backoff(options.backoff);
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= options.attempts || !options.isTransient(err) || options.signal?.aborted) throw err;
      await sleep(backoff.next(), options.signal);
    }
  }
}
