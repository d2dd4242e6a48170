/*
 * Turning a stream of triggers into few runs: a debounce (wait for quiet, but not forever) and a single flight (one
 * run at a time; asked again meanwhile, once more after). The operator's discovery and dragnet scope use both.
 */

/** Options of a Debouncer. */
export interface DebounceOptions {
  /** Quiet time after the last trigger before firing. */
  quietMs: number;
  /** Longest a stream of triggers may hold firing back, from the first one; default: no limit. */
  maxDelayMs?: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

/** Calls `fire` once triggers have been quiet for `quietMs`, but no later than `maxDelayMs` after the first. */
export class Debouncer {
  private timer: NodeJS.Timeout | null = null;
  private first = 0;

  constructor(
    private readonly fire: () => void,
    private readonly options: DebounceOptions,
  ) {}

  /** Fires after the quiet time (or `quietMs` given here), counted from now. */
  trigger(quietMs = this.options.quietMs): void {
    const now = (this.options.now ?? Date.now)();
    if (!this.timer) this.first = now;
    else clearTimeout(this.timer);
    const latest = this.first + (this.options.maxDelayMs ?? Infinity) - now;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.fire();
      },
      Math.max(0, Math.min(quietMs, latest)),
    );
  }

  /** Drops a pending firing. */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * Runs an asynchronous task one at a time: asked while it runs, it runs once more after, however often it was asked.
 * The task handles its own errors (it must not reject).
 */
export class SingleFlight {
  private running: Promise<void> | null = null;
  private pending = false;

  constructor(
    private readonly task: () => Promise<void>,
    /** Checked before running once more: true ends the flight. */
    private readonly stopped: () => boolean = () => false,
  ) {}

  /** Runs the task now, or once more after the run in progress. */
  run(): void {
    if (this.running) {
      this.pending = true;
      return;
    }
    this.running = (async () => {
      do {
        this.pending = false;
        await this.task();
      } while (this.pending && !this.stopped());
      this.running = null;
    })();
  }

  /** From inside the task: run once more when this run ends. */
  again(): void {
    this.pending = true;
  }

  /** Settles when no run is in progress. */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}
