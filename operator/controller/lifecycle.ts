import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';

/*
 * One lifecycle for everything the operator runs: each part is a Runnable, added to one Lifecycle in the order it
 * must start (what others read first), started in that order and stopped in the reverse one, by one exit path.
 */

/** Something the operator starts and stops: an informer set, a controller, a server, a timer. */
export interface Runnable {
  /** Starts it; a promise that rejects means it could not start (the operator does not either). */
  start(): void | Promise<void>;
  /** Stops it: no more work, timers cleared, connections closed; resolves when done. Called once. */
  stop(): void | Promise<void>;
}

/** A Runnable from two functions (a part whose start or stop is a single call). */
export function runnable(start: () => void | Promise<void>, stop: () => void | Promise<void>): Runnable {
  return { start, stop };
}

/** What a Lifecycle runs, by name (logs). */
interface Part {
  name: string;
  part: Runnable;
}

/** Starts its parts in order and stops the started ones in reverse order, once. */
export class Lifecycle {
  private readonly parts: Part[] = [];
  private readonly started: Part[] = [];
  private stopping: Promise<void> | null = null;

  constructor(private readonly logger: Logger) {}

  /** Adds a part; parts start in the order they were added. */
  add(name: string, part: Runnable): this {
    this.parts.push({ name, part });
    return this;
  }

  /** Starts every part not started yet, in order; if one fails, stops those started and rethrows. */
  async start(signal?: AbortSignal): Promise<void> {
    for (const p of this.parts) {
      if (this.started.includes(p)) continue;
      if (signal?.aborted || this.stopping) break;
      try {
        await p.part.start();
        this.started.push(p);
      } catch (err) {
        this.logger.error('cannot start', { part: p.name, error: messageOf(err) });
        await this.stop();
        throw err;
      }
    }
    if (signal?.aborted) {
      await this.stop();
      throw new Error('start-up cancelled');
    }
  }

  /** Stops the started parts in reverse order (a part that fails to stop is logged; the others still stop). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const p of [...this.started].reverse()) {
        try {
          await p.part.stop();
        } catch (err) {
          this.logger.warn('stopping failed', { part: p.name, error: messageOf(err) });
        }
      }
      this.started.length = 0;
    })();
    return this.stopping;
  }
}
