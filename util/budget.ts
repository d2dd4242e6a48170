import { BudgetClocks } from './budget-clock';
import { cpuMs } from './cpu-clock';
import {
  BUDGET_CHECK_STEPS,
  BudgetExhaustedError,
  BudgetLimits,
  DEFAULT_BUDGET,
  EAGER_CPU_MS,
  FIRST_CPU_LOOK,
  MIN_GIVEN_BACK_MS,
  RULE_TIMED_AFTER_STEPS,
  RuleBudgetExhaustedError,
  ruleShareOf,
} from './budget-limits';

// The limits, shares and errors live in budget-limits.ts; importers take them from here with the budget. Named, not
// `export *`: compiled to CommonJS, `export *` reads every name through one shared getter (a megamorphic lookup on
// the request path, at each evaluator's start); a named re-export is a getter of its own, inlined.
export { BUDGET_CHECK_STEPS, BudgetExhaustedError, DEFAULT_BUDGET, EAGER_CPU_MS } from './budget-limits';
export { FIRST_CPU_LOOK, MIN_GIVEN_BACK_MS, REJECT_RESERVE, RULE_SHARE } from './budget-limits';
export { RULE_SHARE_CAP, RULE_TIMED_AFTER_STEPS, RuleBudgetExhaustedError } from './budget-limits';
export { UNTIMED_BUDGET, ruleShareOf } from './budget-limits';
export type { BudgetLimits } from './budget-limits';
export type { BudgetClocks } from './budget-clock';

const ms = (n: number) => +n.toFixed(2);

/**
 * The work and CPU time one admission request may use, shared by every rule, select, template and patch operation of
 * the request. Evaluators keep their own step counters and charge them here in batches (see BUDGET_CHECK_STEPS);
 * every batch also looks at the time. Between beginRule() and endRule() the rule being evaluated also has its own
 * share (RULE_SHARE): when it runs out, RuleBudgetExhaustedError fails that rule alone, and whatever it overshot
 * its share by is given back to the request (up to the request's own time in all), so no rule's overshoot is taken
 * from the rules after it.
 */
export class RequestBudget {
  private remaining: number;
  // Reading the clock costs more than a step: charge() checks once `remaining` falls to checkBelow, the highest of
  // the periodic look (batchBelow), the held part and the current rule's limits.
  private checkBelow: number;
  private batchBelow: number;
  // Held back by reserve() until release(): the steps and the CPU milliseconds.
  private heldSteps = 0;
  private heldMs = 0;
  // Why charges throw right now (the phase ran out), and why the request first ran out (kept after release()).
  private stopped: string | null = null;
  private exhaustedBy: string | null = null;
  /** A rule's share under this budget. */
  readonly share: BudgetLimits;
  private readonly now: () => number;
  private readonly cpu: () => number;
  // Whether any time limit is finite: an untimed budget never reads a clock after its start.
  private readonly timed: boolean;
  private lastNow: number;
  private readonly maxGivenBack: number;
  // The request's CPU time: used = min(cpu() - cpuFrom, wall time since the start) - excused. cpuFrom is NaN until
  // the CPU clock is first read, then that reading less the wall time since the start. The evaluating thread never
  // has more CPU time than wall time; a process clock (Node 20) can, counting other threads: capped at it.
  private wallFrom: number;
  private cpuFrom = NaN;
  private excused = 0;
  // What failing rules gave back (see MIN_GIVEN_BACK_MS).
  private given = 0;
  // The CPU time the current phase may reach (counted from the start), the wall time it began at, the last CPU
  // reading (wall time, CPU used then) and the wall time of the next one.
  private limitMs: number;
  private phaseWallFrom: number;
  private seenWall = 0;
  private seenUsed = 0;
  private lookAt: number;
  // The current rule (beginRule..endRule): where its steps run out, where its clock starts, and once started (timed),
  // the request time used when it started and the wall time of its next CPU reading. The last clock
  // read before it began stands for its start (beginRule reads no clock).
  private inRule = false;
  private ruleFloor = -Infinity;
  private ruleClockFrom = -Infinity;
  private ruleWorkFrom = -Infinity;
  private ruleWallFrom = 0;
  private ruleSeenUsed = 0;
  private ruleTimed = false;
  private ruleUsedFrom = 0;
  private ruleLookAt = Infinity;
  private ruleStopped: string | null = null;

  constructor(
    readonly limits: BudgetLimits = DEFAULT_BUDGET,
    clocks: BudgetClocks | (() => number) = {},
    share: BudgetLimits = ruleShareOf(limits),
  ) {
    const c = typeof clocks === 'function' ? { now: clocks } : clocks;
    this.now = c.now ?? (() => performance.now());
    this.cpu = c.cpu ?? cpuMs;
    this.share = share;
    this.timed = Number.isFinite(limits.ms) || Number.isFinite(share.ms);
    this.remaining = limits.steps;
    this.batchBelow = this.nextBatch();
    this.checkBelow = this.thresholds();
    this.wallFrom = this.lastNow = this.phaseWallFrom = this.timed ? this.now() : 0;
    this.limitMs = limits.ms;
    this.maxGivenBack = Math.max(limits.ms, MIN_GIVEN_BACK_MS);
    if (limits.ms <= EAGER_CPU_MS) this.usedAt(this.wallFrom);
    this.lookAt = this.nextLook();
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
   * Starts the time afresh: what came before (checking and preparing the object, bounded by its size) is not the
   * rules' doing. Steps are kept.
   */
  restart(): void {
    if (!this.timed) return;
    this.wallFrom = this.lastNow = this.phaseWallFrom = this.now();
    this.cpuFrom = NaN;
    this.excused = 0;
    this.given = 0;
    if (this.limits.ms <= EAGER_CPU_MS) this.usedAt(this.wallFrom);
    this.lookAt = this.nextLook();
  }

  /**
   * Holds back `fraction` of the steps and of the time (from the end) until release(): meanwhile the budget runs
   * out where the held part starts. The engine holds back REJECT_RESERVE for the Reject rules while Patch rules run.
   */
  reserve(fraction: number): void {
    const { steps, ms } = this.limits;
    this.heldSteps = Number.isFinite(steps) ? Math.floor(steps * fraction) : 0;
    this.heldMs = Number.isFinite(ms) ? ms * fraction : 0;
    this.limitMs = ms - this.heldMs;
    this.lookAt = this.nextLook();
    if (this.stopped === null) this.checkBelow = this.thresholds();
  }

  /**
   * Ends reserve(): what was held back, and whatever the earlier phase left, may be spent. The held time counts from
   * now at least: an operation that overran the earlier phase's limit (one large `until`) does not eat into it.
   */
  release(): void {
    if (this.heldMs > 0) {
      this.phaseWallFrom = this.lastNow = this.now();
      // Before the first CPU reading the request may have used at most the wall time so far.
      const used = Number.isNaN(this.cpuFrom) ? this.lastNow - this.wallFrom : this.usedAt(this.lastNow);
      this.limitMs = Math.max(this.limits.ms, used + this.heldMs);
    }
    this.heldSteps = 0;
    this.heldMs = 0;
    this.stopped = null;
    this.lookAt = this.nextLook();
    this.batchBelow = this.nextBatch();
    this.checkBelow = this.thresholds();
  }

  /** Starts a rule's own share: until endRule(), its steps and time are counted against it too. No clock read. */
  beginRule(): void {
    if (!Number.isFinite(this.remaining)) return;
    this.inRule = true;
    this.ruleWallFrom = this.lastNow;
    this.ruleSeenUsed = this.seenUsed;
    this.ruleFloor = this.remaining - this.share.steps;
    this.ruleWorkFrom = this.remaining - RULE_TIMED_AFTER_STEPS;
    this.ruleClockFrom = Number.isFinite(this.share.ms) ? this.ruleWorkFrom : -Infinity;
    this.ruleTimed = false;
    this.ruleLookAt = Infinity;
    this.ruleStopped = null;
    if (this.stopped === null) this.checkBelow = this.thresholds();
  }

  /** Ends the rule's share (whether it ran out or not). */
  endRule(): void {
    if (!this.inRule) return;
    this.inRule = false;
    this.ruleFloor = -Infinity;
    this.ruleClockFrom = -Infinity;
    this.ruleTimed = false;
    this.ruleStopped = null;
    if (this.stopped === null) this.checkBelow = this.thresholds();
  }

  /**
   * Spends n steps, and looks at the time once per BUDGET_CHECK_STEPS steps; throws BudgetExhaustedError when
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

  // The next periodic look is due after BUDGET_CHECK_STEPS more steps. Without a step limit the clock is not read
  // by charge() (unlimited budgets).
  private nextBatch(): number {
    if (this.remaining === Infinity) return -Infinity;
    return this.remaining - BUDGET_CHECK_STEPS;
  }

  // Running out of steps (the phase's or the rule's) is always noticed at once, and a rule's clock starts on time.
  // Called around every candidate rule: plain comparisons (Math.max of four is not inlined as well).
  private thresholds(): number {
    let t = this.batchBelow > this.heldSteps ? this.batchBelow : this.heldSteps;
    if (this.inRule) {
      if (this.ruleFloor > t) t = this.ruleFloor;
      if (!this.ruleTimed && this.ruleClockFrom > t) t = this.ruleClockFrom;
    }
    return t;
  }

  // The wall time at which the phase could first have used its CPU time: before any CPU reading, FIRST_CPU_LOOK of
  // the request's time in.
  private nextLook(): number {
    if (!Number.isFinite(this.limitMs)) return Infinity;
    if (Number.isNaN(this.cpuFrom))
      return this.wallFrom + Math.min(this.limits.ms * FIRST_CPU_LOOK, this.limitMs);
    return this.seenWall + (this.limitMs - this.seenUsed);
  }

  // Reads the CPU clock (the first reading anchors the request's) at wall time `now`; returns the request's CPU
  // time used.
  private usedAt(now: number): number {
    const cpu = this.cpu();
    const wall = now - this.wallFrom;
    if (Number.isNaN(this.cpuFrom)) this.cpuFrom = cpu - wall;
    this.seenWall = now;
    this.seenUsed = (cpu - this.cpuFrom < wall ? cpu - this.cpuFrom : wall) - this.excused;
    this.lookAt = this.nextLook();
    return this.seenUsed;
  }

  // Sets `stopped` (the request or its phase ran out) or `ruleStopped` (the current rule's share did), whichever
  // limit comes first.
  private overrun(): void {
    const { steps } = this.limits;
    const held = this.heldSteps > 0 || this.heldMs > 0;
    const why = ' (the rest is reserved for Reject rules)';
    const ruleFirst = this.ruleFloor >= this.heldSteps;
    if (this.inRule && ruleFirst && this.remaining < this.ruleFloor) {
      // As below: the work an overshoot stands for was never done, so the request keeps it; so does the time the
      // rule took beyond its share (work it did without charging it first).
      this.remaining = this.ruleFloor;
      this.failRule(
        `rule budget exhausted: more than ${this.share.steps} evaluation steps (one rule's share)`,
        this.timed ? this.ruleMsAt(this.readNow()) - this.share.ms : 0,
      );
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
    if (!this.timed) return;
    const now = this.readNow();
    if (this.inRule && this.ruleOutOfTime(now)) return;
    if (now < this.lookAt) return;
    const used = this.usedAt(now);
    if (used <= this.limitMs) return;
    if (this.inRule && this.remaining > this.ruleWorkFrom) {
      // A rule doing little work (it charges every operation as it goes) cannot have taken the time: a garbage
      // collection, the first run of the code, the machine did. Not the rules' work: it is excused, and the time
      // counts again from the last reading before the rule began.
      this.excuse(used - this.ruleSeenUsed);
      return;
    }
    if (this.inRule && (now - this.ruleWallFrom) * 2 > now - this.phaseWallFrom) {
      // The time ran out during a rule doing real work that took more than half of it by itself: its doing, however
      // busy the machine (the proportion is the same). It fails alone; its time beyond its share goes back.
      this.failRule(
        `rule budget exhausted: took more than half of the request's ${ms(this.phaseMs())} ms of CPU time (one rule's share)`,
        this.ruleMsAt(now) - this.share.ms,
      );
      return;
    }
    const { ms: total } = this.limits;
    this.stopRequest(
      held
        ? `request budget exhausted: Patch rules took more than ${ms(total - this.heldMs)} of ${ms(total)} ms of CPU time${why}`
        : `request budget exhausted: evaluation took more than ${ms(total)} ms of CPU time`,
    );
  }

  private readNow(): number {
    return (this.lastNow = this.now());
  }

  // The CPU time the current rule has taken by wall time `now` (see ruleOutOfTime).
  private ruleMsAt(now: number): number {
    const used = this.usedAt(now);
    return this.ruleTimed ? used - this.ruleUsedFrom : this.untimedMs(now, used);
  }

  // An untimed rule's CPU time: its part of the wall time, in proportion, and no more than all since the last CPU
  // reading before it began.
  private untimedMs(now: number, used: number): number {
    return Math.min(this.wallPart(now) * used, used - this.ruleSeenUsed);
  }

  // The current phase's own time: the Patch phase's part while the rest is held, else the whole.
  private phaseMs(): number {
    return this.limits.ms - this.heldMs;
  }

  // The rule's CPU time: its clock starts once it has done real work (RULE_TIMED_AFTER_STEPS) and counts from its
  // start; it runs out after share.ms of CPU time, unless the request's own limit comes first (then the request
  // decides). True when it ran out.
  private ruleOutOfTime(now: number): boolean {
    let used: number;
    if (!this.ruleTimed) {
      if (this.remaining > this.ruleClockFrom) return false;
      this.ruleTimed = true;
      used = this.usedAt(now);
      // No clock was read when it began (see untimedMs).
      this.ruleUsedFrom = used - this.untimedMs(now, used);
    } else {
      if (now < this.ruleLookAt) return false;
      used = this.usedAt(now);
    }
    const ruleMs = used - this.ruleUsedFrom;
    if (ruleMs <= this.share.ms) {
      this.ruleLookAt = now + (this.share.ms - ruleMs);
      return false;
    }
    this.ruleLookAt = Infinity;
    if (this.ruleUsedFrom + this.share.ms > this.limitMs) return false;
    this.failRule(
      `rule budget exhausted: took more than ${ms(this.share.ms)} ms of CPU time (one rule's share)`,
      ruleMs - this.share.ms,
    );
    return true;
  }

  // The current rule's part of the wall time since the request's start (a clock read stands for when it began).
  private wallPart(now: number): number {
    return (now - this.ruleWallFrom) / Math.max(now - this.wallFrom, 1e-9);
  }

  // The current rule ran out of its share: it fails alone, and the CPU time it overshot its share by is given back
  // to the request (up to the request's own time in all), so the rules after it keep theirs.
  private failRule(why: string, overshootMs: number): void {
    this.ruleStopped = why;
    this.giveBack(overshootMs);
  }

  // Gives CPU time back to the request, up to maxGivenBack in all.
  private giveBack(ms: number): void {
    const given = Math.min(Math.max(ms, 0), this.maxGivenBack - this.given);
    this.given += given;
    this.excuse(given);
  }

  // Takes CPU time off what the request has used.
  private excuse(ms: number): void {
    this.excused += ms;
    this.seenUsed -= ms;
    this.lookAt = this.nextLook();
  }

  private stopRequest(why: string): void {
    this.stopped = why;
    this.exhaustedBy ??= why;
  }
}
