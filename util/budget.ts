import { performance } from 'node:perf_hooks';

/** What one admission may spend, all rules together: evaluation steps and wall-clock time. */
export interface BudgetLimits {
  /** Evaluation steps: select visits, template steps, patch operations, 64-character blocks of string work. */
  steps: number;
  /** Milliseconds from the start of evaluation. */
  ms: number;
}

/**
 * Defaults: 100 ms and 1 million steps (about 30-250 ms of the most expensive work). Legitimate requests need far
 * less (1,500 rules in scope: ~2 ms and ~6,000 steps; 150 rules that all match and patch: ~8 ms, 21,000 steps), and
 * the first expensive request of a namespace, before it is demoted, holds the event loop (every other admission)
 * for at most this long.
 */
export const DEFAULT_BUDGET: BudgetLimits = { steps: 1_000_000, ms: 100 };

/**
 * Without a webhook (CLI tools, tests, the engine called alone): the default steps and no time limit, so results do
 * not depend on how busy the machine is.
 */
export const UNTIMED_BUDGET: BudgetLimits = { steps: DEFAULT_BUDGET.steps, ms: Infinity };

/**
 * Share of the steps and time held back for Reject rules while Patch rules run (when the request has Reject rules):
 * a tenant's expensive Patch rules cannot use up what the cluster's Reject rules need.
 */
export const REJECT_RESERVE = 0.25;

/**
 * How often (in steps) a per-evaluation counter reports to the request budget. Also bounds how far past its
 * deadline a request runs: 4096 steps are well under a millisecond.
 */
export const BUDGET_CHECK_STEPS = 4096;

/** Thrown once a request's budget is spent; everything that catches rule errors must let it through. */
export class BudgetExhaustedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetExhaustedError';
  }
}

/**
 * The work and time one admission request may use, shared by every rule, select, template and patch operation of
 * the request. Evaluators keep their own step counters and charge them here in batches (see BUDGET_CHECK_STEPS);
 * every charge also checks the deadline.
 */
export class RequestBudget {
  private remaining: number;
  // Reading the clock costs more than a step: charge() reads it once per BUDGET_CHECK_STEPS steps.
  private checkBelow: number;
  private deadline: number;
  // Held back by reserve() until release(): the steps and the milliseconds before the deadline.
  private heldSteps = 0;
  private heldMs = 0;
  // Why charges throw right now (the phase ran out), and why the request first ran out (kept after release()).
  private stopped: string | null = null;
  private exhaustedBy: string | null = null;

  constructor(
    readonly limits: BudgetLimits = DEFAULT_BUDGET,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.remaining = limits.steps;
    this.checkBelow = this.nextCheck();
    this.deadline = now() + limits.ms;
  }

  /** An unlimited budget (tools that run one request with nobody waiting, and tests). */
  static unlimited(): RequestBudget {
    return new RequestBudget({ steps: Infinity, ms: Infinity });
  }

  /** Steps not yet spent (never negative). */
  get stepsLeft(): number {
    return Math.max(this.remaining, 0);
  }

  /** Why the budget (or a phase's share of it) first ran out, or null while it lasts. */
  get exhausted(): string | null {
    return this.exhaustedBy;
  }

  /**
   * Holds back `fraction` of the steps and of the time (from the end) until release(): meanwhile the budget runs
   * out where the held part starts. The engine holds back REJECT_RESERVE for the Reject rules while Patch rules run.
   */
  reserve(fraction: number): void {
    const { steps, ms } = this.limits;
    this.heldSteps = Number.isFinite(steps) ? Math.floor(steps * fraction) : 0;
    this.heldMs = Number.isFinite(ms) ? ms * fraction : 0;
    if (this.stopped === null) this.checkBelow = this.nextCheck();
  }

  /**
   * Ends reserve(): what was held back, and whatever the earlier phase left, may be spent. The held time counts from
   * now at least: an operation that overran the earlier phase's deadline (one large `until`) does not eat into it.
   */
  release(): void {
    if (this.heldMs > 0) this.deadline = Math.max(this.deadline, this.now() + this.heldMs);
    this.heldSteps = 0;
    this.heldMs = 0;
    this.stopped = null;
    this.checkBelow = this.nextCheck();
  }

  /**
   * Spends n steps, and checks the deadline once per BUDGET_CHECK_STEPS steps; throws BudgetExhaustedError when
   * either runs out (and from then on).
   */
  charge(n: number): void {
    this.remaining -= n;
    if (this.remaining <= this.checkBelow) this.check();
  }

  /** Throws BudgetExhaustedError if the steps or the time are spent; at rule boundaries and from charge(). */
  check(): void {
    if (this.stopped === null) {
      this.stopped = this.overrun();
      if (this.stopped === null) {
        this.checkBelow = this.nextCheck();
        return;
      }
      this.exhaustedBy ??= this.stopped;
      // Every later charge throws too (until release()).
      this.checkBelow = Infinity;
    }
    throw new BudgetExhaustedError(this.stopped);
  }

  // The next check is due after BUDGET_CHECK_STEPS more steps, never below the held part: running out of steps is
  // always noticed at once. Without a step limit the clock is not read by charge() (unlimited budgets).
  private nextCheck(): number {
    if (this.remaining === Infinity) return -Infinity;
    return Math.max(this.remaining - BUDGET_CHECK_STEPS, this.heldSteps);
  }

  private overrun(): string | null {
    const { steps, ms } = this.limits;
    const held = this.heldSteps > 0 || this.heldMs > 0;
    const why = ' (the rest is reserved for Reject rules)';
    if (this.remaining < this.heldSteps) {
      // Large charges are paid before the work they stand for (a 300,000-element `until`): the work the overshoot
      // stands for was never done, so the held part stays whole.
      if (held) this.remaining = this.heldSteps;
      return held
        ? `request budget exhausted: Patch rules used more than ${steps - this.heldSteps} of ${steps} evaluation steps${why}`
        : `request budget exhausted: more than ${steps} evaluation steps`;
    }
    if (this.now() > this.deadline - this.heldMs) {
      return held
        ? `request budget exhausted: Patch rules took longer than ${ms - this.heldMs} of ${ms} ms${why}`
        : `request budget exhausted: evaluation took longer than ${ms} ms`;
    }
    return null;
  }
}
