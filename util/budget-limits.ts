/** What one admission may spend, all rules together: evaluation steps and CPU time. */
export interface BudgetLimits {
  /** Evaluation steps: select visits, template steps, patch operations, 64-character blocks of string work. */
  steps: number;
  /** Milliseconds of CPU time from the start of evaluation (a busy machine stretches wall time, not this). */
  ms: number;
}

/**
 * Defaults: 100 ms and 1 million steps (about 30-250 ms of the most expensive work). Legitimate requests need far
 * less (1,500 rules in scope: ~2 ms and ~6,000 steps; 150 rules that all match and patch: ~8 ms, 21,000 steps), and
 * the first expensive request of a namespace, before it is demoted, holds the event loop (every other admission)
 * for about this much CPU time.
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
 * How often (in steps) a per-evaluation counter reports to the request budget, and the wall clock (cheap) is looked
 * at. Also bounds how far past its limit a request or a rule runs: every operation charges its work as it goes, and
 * 1,024 steps are a fraction of a millisecond of work, even when garbage collection makes each step dearer.
 */
export const BUDGET_CHECK_STEPS = 1024;

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
 * A rule is judged on time only once it has spent this many steps itself (an ordinary rule spends ~140): only a
 * rule doing real work reads the CPU clock (a system call). Its time then counts from its start.
 */
export const RULE_TIMED_AFTER_STEPS = 2048;

/**
 * The CPU clock is a system call, the wall clock is not; CPU time never runs ahead of wall time on the one thread
 * that evaluates (a process clock, Node 20's, is counted as no more than it). So the CPU clock is read only once the wall clock says a limit could have been reached, and first
 * once this fraction of the request's time has passed on the wall clock (or a rule is timed): until then the
 * request is taken to have had the CPU all along, so a busy machine costs it at most this fraction of its time, and
 * ordinary requests, which end long before, never read it.
 */
export const FIRST_CPU_LOOK = 0.125;

/**
 * A budget of this much time or less (a demoted namespace's 5 ms) reads the CPU clock at its start: one batch of
 * steps on a busy machine could take most of its time on the wall clock before the first look.
 */
export const EAGER_CPU_MS = 20;

/**
 * What rules that fail alone give back to a request (the time they took beyond their share, a garbage collection
 * among it), in all: the request's own time, and at least this many ms (a demoted request's 5 ms is less than one
 * such pause on a busy machine). A request so takes at most its time plus this, and one operation's overshoot.
 */
export const MIN_GIVEN_BACK_MS = 20;

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
