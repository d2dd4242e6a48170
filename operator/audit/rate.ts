import { sleep } from '../../kube/backoff';

/**
 * A token bucket: at most `qps` calls of take() per second on average, `burst` at once. Shared by everything one
 * audit sends (lists, reads, dry runs, patches), so --qps bounds what the API server gets from it.
 */
export class RateLimiter {
  private tokens: number;
  private last: number;
  private readonly burst: number;

  constructor(
    private readonly qps: number,
    burst?: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(qps > 0)) throw new Error(`qps must be positive, got ${qps}`);
    this.burst = Math.max(1, burst ?? Math.ceil(qps));
    this.tokens = this.burst;
    this.last = now();
  }

  /** Resolves when a call may go out (at once while tokens last). */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const t = this.now();
      this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
      this.last = t;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      if (signal?.aborted) return;
      await sleep(((1 - this.tokens) / this.qps) * 1000, signal);
    }
  }
}
