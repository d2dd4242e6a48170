import { performance } from 'node:perf_hooks';

/** What one admission may spend, all rules together: evaluation steps and wall-clock time. */
export interface BudgetLimits {
  /** Evaluation steps: select visits, template steps, patch operations, 64-character blocks of string work. */
  steps: number;
  /** Milliseconds from the start of evaluation. */
  ms: number;
}

/** Defaults: 10 million steps (about a second of evaluation) and 1 s, well within the API server's 10 s timeout. */
export const DEFAULT_BUDGET: BudgetLimits = { steps: 10_000_000, ms: 1_000 };

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
  private readonly deadline: number;
  private exhaustedBy: string | null = null;

  constructor(
    readonly limits: BudgetLimits = DEFAULT_BUDGET,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.remaining = limits.steps;
    this.checkBelow = Math.max(limits.steps - BUDGET_CHECK_STEPS, 0);
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

  /** Why the budget ran out, or null while it lasts. */
  get exhausted(): string | null {
    return this.exhaustedBy;
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
    if (this.exhaustedBy === null) {
      if (this.remaining < 0) {
        this.exhaustedBy = `request budget exhausted: more than ${this.limits.steps} evaluation steps`;
      } else if (this.now() > this.deadline) {
        this.exhaustedBy = `request budget exhausted: evaluation took longer than ${this.limits.ms} ms`;
      } else {
        // Never below 0: running out of steps is always noticed at once.
        this.checkBelow = Math.max(this.remaining - BUDGET_CHECK_STEPS, 0);
        return;
      }
      // Every later charge throws too.
      this.checkBelow = Infinity;
    }
    throw new BudgetExhaustedError(this.exhaustedBy);
  }
}
