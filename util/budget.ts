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

/**
 * A rule's own share of the request budget: a tenth of the configured budget, and at most RULE_SHARE_CAP of the
 * budget the request runs under. A rule that spends more fails alone; the other rules of the request still run. An
 * ordinary rule spends ~140 steps and ~50 us.
 */
export const RULE_SHARE = 0.1;

/**
 * In a demoted namespace's small budget (5 ms, 50,000 steps) a rule gets 40% of it (2 ms, 20,000 steps): two heavy
 * rules fail alone and leave a fifth of the request to the others, and a moderately costly rule still runs.
 */
export const RULE_SHARE_CAP = 0.4;

/**
 * A rule is judged on time only once it has spent this many steps itself (an ordinary rule spends ~140), and on
 * the CPU time the process spent meanwhile: a pause of the process (CPU throttling, another process on the core)
 * or a slow first run never fails an ordinary rule alone. The request's own deadline still counts wall time.
 */
export const RULE_TIMED_AFTER_STEPS = BUDGET_CHECK_STEPS;

/** The share of one rule for a request under `limits`, when the configured budget is `configured`. */
export function ruleShareOf(limits: BudgetLimits, configured: BudgetLimits = limits): BudgetLimits {
  return {
    steps: Math.floor(Math.min(configured.steps * RULE_SHARE, limits.steps * RULE_SHARE_CAP)),
    ms: Math.min(configured.ms * RULE_SHARE, limits.ms * RULE_SHARE_CAP),
  };
}

/** Thrown once a request's budget is spent; everything that catches rule errors must let it through. */
export class BudgetExhaustedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetExhaustedError';
  }
}

/**
 * Thrown once the rule being evaluated has spent its own share (see RULE_SHARE): the engine fails that rule alone
 * and goes on with the next. A BudgetExhaustedError, so every evaluator lets it through as it lets the request's.
 */
export class RuleBudgetExhaustedError extends BudgetExhaustedError {
  constructor(message: string) {
    super(message);
    this.name = 'RuleBudgetExhaustedError';
  }
}

/** Clocks a RequestBudget reads (tests pass their own). */
export interface BudgetClocks {
  /** Wall clock in ms: the request's deadline. */
  now?: () => number;
  /** CPU time of the process in ms: a rule's share of time. */
  cpu?: () => number;
}

function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * The work and time one admission request may use, shared by every rule, select, template and patch operation of
 * the request. Evaluators keep their own step counters and charge them here in batches (see BUDGET_CHECK_STEPS);
 * every charge also checks the deadline. Between beginRule() and endRule() the rule being evaluated also has its
 * own share (RULE_SHARE): when it runs out, RuleBudgetExhaustedError fails that rule alone.
 */
export class RequestBudget {
  private remaining: number;
  // Reading the clock costs more than a step: charge() checks once `remaining` falls to checkBelow, the highest of
  // the periodic clock read (batchBelow), the held part and the current rule's limits.
  private checkBelow: number;
  private batchBelow: number;
  private deadline: number;
  // When the current phase (all rules, or the Patch rules and then the Reject rules) began.
  private phaseStart: number;
  // Held back by reserve() until release(): the steps and the milliseconds before the deadline.
  private heldSteps = 0;
  private heldMs = 0;
  // Why charges throw right now (the phase ran out), and why the request first ran out (kept after release()).
  private stopped: string | null = null;
  private exhaustedBy: string | null = null;
  /** A rule's share under this budget. */
  readonly share: BudgetLimits;
  private readonly now: () => number;
  private readonly cpu: () => number;
  // The current rule (beginRule..endRule): where its steps run out, where its clock starts, and once started, the
  // CPU time it started at and the wall time its share would end at if the process ran throughout. The last clock
  // read before it began stands for its start (beginRule reads no clock).
  private inRule = false;
  private ruleFloor = -Infinity;
  private ruleClockFrom = -Infinity;
  private ruleCpuFrom = 0;
  private ruleWallFrom = 0;
  private ruleDeadline = Infinity;
  private ruleStopped: string | null = null;
  private lastNow: number;

  constructor(
    readonly limits: BudgetLimits = DEFAULT_BUDGET,
    clocks: BudgetClocks | (() => number) = {},
    share: BudgetLimits = ruleShareOf(limits),
  ) {
    const c = typeof clocks === 'function' ? { now: clocks } : clocks;
    this.now = c.now ?? (() => performance.now());
    this.cpu = c.cpu ?? processCpuMs;
    this.share = share;
    this.remaining = limits.steps;
    this.batchBelow = this.nextBatch();
    this.checkBelow = this.thresholds();
    this.lastNow = this.now();
    this.phaseStart = this.lastNow;
    this.deadline = this.lastNow + limits.ms;
  }

  /** An unlimited budget (tools that run one request with nobody waiting, and tests). */
  static unlimited(): RequestBudget {
    return new RequestBudget({ steps: Infinity, ms: Infinity });
  }

  /** Steps not yet spent (never negative). */
  get stepsLeft(): number {
    return Math.max(this.remaining, 0);
  }

  /** Why the budget (or a phase's share of it) first ran out, or null while it lasts. Rules' shares aside. */
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
    if (this.stopped === null) this.checkBelow = this.thresholds();
  }

  /**
   * Ends reserve(): what was held back, and whatever the earlier phase left, may be spent. The held time counts from
   * now at least: an operation that overran the earlier phase's deadline (one large `until`) does not eat into it.
   */
  release(): void {
    this.phaseStart = this.lastNow = this.now();
    if (this.heldMs > 0) this.deadline = Math.max(this.deadline, this.phaseStart + this.heldMs);
    this.heldSteps = 0;
    this.heldMs = 0;
    this.stopped = null;
    this.batchBelow = this.nextBatch();
    this.checkBelow = this.thresholds();
  }

  /** Starts a rule's own share: until endRule(), its steps and time are counted against it too. No clock read. */
  beginRule(): void {
    if (!Number.isFinite(this.remaining)) return;
    this.inRule = true;
    this.ruleWallFrom = this.lastNow;
    this.ruleFloor = this.remaining - this.share.steps;
    this.ruleClockFrom = Number.isFinite(this.share.ms) ? this.remaining - RULE_TIMED_AFTER_STEPS : -Infinity;
    this.ruleDeadline = Infinity;
    this.ruleStopped = null;
    if (this.stopped === null) this.checkBelow = this.thresholds();
  }

  /** Ends the rule's share (whether it ran out or not). */
  endRule(): void {
    if (!this.inRule) return;
    this.inRule = false;
    this.ruleFloor = -Infinity;
    this.ruleClockFrom = -Infinity;
    this.ruleDeadline = Infinity;
    this.ruleStopped = null;
    if (this.stopped === null) this.checkBelow = this.thresholds();
  }

  /**
   * Spends n steps, and checks the deadline once per BUDGET_CHECK_STEPS steps; throws BudgetExhaustedError when
   * either runs out (and from then on), RuleBudgetExhaustedError when the current rule's share does.
   */
  charge(n: number): void {
    this.remaining -= n;
    if (this.remaining <= this.checkBelow) this.check();
  }

  /**
   * Throws BudgetExhaustedError if the steps or the time are spent (RuleBudgetExhaustedError if the current rule's
   * share is); at rule boundaries and from charge().
   */
  check(): void {
    if (this.stopped === null && this.ruleStopped === null) {
      this.overrun();
      if (this.stopped === null && this.ruleStopped === null) {
        this.batchBelow = this.nextBatch();
        this.checkBelow = this.thresholds();
        return;
      }
      // Every later charge throws too (until release(), or endRule() for the rule's share).
      this.checkBelow = Infinity;
    }
    if (this.stopped !== null) throw new BudgetExhaustedError(this.stopped);
    throw new RuleBudgetExhaustedError(this.ruleStopped as string);
  }

  // The next periodic check is due after BUDGET_CHECK_STEPS more steps. Without a step limit the clock is not read
  // by charge() (unlimited budgets).
  private nextBatch(): number {
    if (this.remaining === Infinity) return -Infinity;
    return this.remaining - BUDGET_CHECK_STEPS;
  }

  // Running out of steps (the phase's or the rule's) is always noticed at once, and a rule's clock starts on time.
  private thresholds(): number {
    if (this.remaining === Infinity) return -Infinity;
    const clockDue = this.inRule && this.ruleDeadline === Infinity ? this.ruleClockFrom : -Infinity;
    return Math.max(this.batchBelow, this.heldSteps, this.ruleFloor, clockDue);
  }

  // Sets `stopped` (the request or its phase ran out) or `ruleStopped` (the current rule's share did), whichever
  // limit comes first; when the request's time runs out during a rule that took most of it, the rule is the one that
  // ran out (the rules after it find the request spent).
  private overrun(): void {
    const { steps, ms } = this.limits;
    const held = this.heldSteps > 0 || this.heldMs > 0;
    const why = ' (the rest is reserved for Reject rules)';
    const ruleFirst = this.ruleFloor >= this.heldSteps;
    if (this.inRule && ruleFirst && this.remaining < this.ruleFloor) {
      // As below: the work an overshoot stands for was never done, so the request keeps it.
      this.remaining = this.ruleFloor;
      this.ruleStopped = `rule budget exhausted: more than ${this.share.steps} evaluation steps (one rule's share)`;
      return;
    }
    if (this.remaining < this.heldSteps) {
      // Large charges are paid before the work they stand for (a 300,000-element `until`): the work the overshoot
      // stands for was never done, so the held part stays whole.
      if (held) this.remaining = this.heldSteps;
      this.stopRequest(
        held
          ? `request budget exhausted: Patch rules used more than ${steps - this.heldSteps} of ${steps} evaluation steps${why}`
          : `request budget exhausted: more than ${steps} evaluation steps`,
      );
      return;
    }
    const now = (this.lastNow = this.now());
    const phaseDeadline = this.deadline - this.heldMs;
    if (this.inRule && this.ruleDeadline === Infinity && this.remaining <= this.ruleClockFrom) {
      this.ruleCpuFrom = this.cpu();
      this.ruleDeadline = now + this.share.ms;
    }
    if (this.ruleDeadline <= phaseDeadline && now > this.ruleDeadline) {
      // Only CPU time counts against a rule: while the process was paused its share waits.
      const used = this.cpu() - this.ruleCpuFrom;
      if (used > this.share.ms) {
        this.ruleStopped = `rule budget exhausted: took longer than ${this.share.ms} ms (one rule's share)`;
        return;
      }
      this.ruleDeadline = now + (this.share.ms - used);
    }
    if (now > phaseDeadline) {
      const phase = phaseDeadline - this.phaseStart;
      if (this.ruleDeadline !== Infinity && (now - this.ruleWallFrom) * 2 > phase) {
        // The time ran out while a rule that has done real work had taken more than half of it by itself: its doing,
        // however busy the machine. It fails alone; the rules after it find the time gone all the same.
        this.ruleStopped = `rule budget exhausted: took more than half of the request's ${+phase.toFixed(2)} ms (one rule's share)`;
        return;
      }
      this.stopRequest(
        held
          ? `request budget exhausted: Patch rules took longer than ${ms - this.heldMs} of ${ms} ms${why}`
          : `request budget exhausted: evaluation took longer than ${ms} ms`,
      );
    }
  }

  private stopRequest(why: string): void {
    this.stopped = why;
    this.exhaustedBy ??= why;
  }
}
