import { performance } from 'node:perf_hooks';
import { BudgetLimits, DEFAULT_BUDGET, RequestBudget, ruleShareOf } from '../util/budget';
import { cpuMs } from '../util/cpu-clock';
import { errorOf } from '../util/errors';

/** How namespaces share the one event loop that evaluates every admission. */
export interface FairnessOptions {
  /** What one request may spend (all its rules); default DEFAULT_BUDGET. */
  budget?: BudgetLimits;
  /** A request whose evaluation takes more CPU time than this demotes its namespace; default 25 ms. */
  slowMs?: number;
  /** Evaluation CPU time one namespace may use per second (of wall time) before it is demoted; default 250 ms. */
  shareMsPerSecond?: number;
  /**
   * The share rule applies only when the namespace's requests cost more than this on average in the window; default
   * 2 ms. A busy namespace of cheap requests (a CI namespace creating pods) is volume, which the API server's own
   * priority and fairness governs, not expensive rules: demoting it would only slow it down.
   */
  costlyMs?: number;
  /** How long a demotion lasts, renewed by every new offence; default 60 s. */
  demotionMs?: number;
  /** The budget of a demoted namespace's requests; default 5 ms and the steps in proportion (50,000). */
  demotedBudget?: BudgetLimits;
  /**
   * The part of the process's time all demoted evaluations together may take; default 0.25. Beyond it the queue
   * waits, so namespaces in good standing keep at least the rest however hard demoted ones are hammered.
   */
  demotedShare?: number;
  /** A queued evaluation that has waited this long (ms) runs whatever the share; default 2,000 (webhook timeouts). */
  demotedMaxWaitMs?: number;
  /** Wall clock in ms (tests). */
  now?: () => number;
  /** CPU clock in ms (tests); default util/cpu-clock.ts cpuMs, the evaluating thread's where the runtime can tell. */
  cpu?: () => number;
}

// 5 ms, and steps in the budget's own proportion to time: a single large operation is paid for before it runs, so
// with more steps than the time allows for, one operation could outlast the 5 ms by far (a 300,000-element `until`
// takes ~40 ms).
function demoted(budget: BudgetLimits): BudgetLimits {
  const ms = Math.min(5, budget.ms);
  const steps = Number.isFinite(budget.ms) ? (budget.steps * ms) / budget.ms : budget.steps / 20;
  return { steps: Math.ceil(steps), ms };
}

// Demoted evaluations may run back to back for this long (ms) before the share paces them.
const DEMOTED_BURST_MS = 20;

// An evaluation shorter than this (ms of wall time) is booked at its wall time, which its CPU time cannot exceed and
// which is far under every limit: the CPU clock (a system call or two) is read again only after longer ones.
const CPU_READ_FROM_MS = 1;

interface Account {
  windowStart: number;
  windowMs: number;
  windowCount: number;
  demotedUntil: number;
}

/** One evaluation run under NamespaceFairness. */
export interface FairRun<T> {
  value: T;
  /** The budget it ran with (exhausted or not). */
  budget: RequestBudget;
  /** Whether it ran demoted (small budget, queued). */
  demoted: boolean;
  /** Set when this evaluation demoted its namespace (or renewed the demotion). */
  demotion: DemotionReason | null;
  /** The evaluation's CPU time (ms): what its namespace is charged (under 1 ms of wall time, the wall time). */
  cpuMs: number;
  /** The evaluation's wall time (ms): longer than its CPU time on a busy machine, and not its doing. */
  wallMs: number;
}

/** Why a namespace was demoted. */
export type DemotionReason = 'budget exhausted' | 'slow request' | 'too much evaluation time';

/**
 * Per-namespace cost accounting. Evaluation is synchronous on the one event loop, so a request in evaluation holds up
 * every other namespace's requests. A namespace whose requests exhaust their budget, take long, or use too much of
 * the loop (in CPU time: a busy machine stretches everyone's wall time alike) is demoted for a while: its requests
 * get a small budget (so a cheap one still gets its rules, an expensive one fails fast) and wait in a queue
 * evaluated one per event-loop turn, so other namespaces' requests, read in between, never wait behind more than one
 * of them.
 */
export class NamespaceFairness {
  readonly budget: BudgetLimits;
  readonly demotedBudget: BudgetLimits;
  private readonly slowMs: number;
  private readonly shareMsPerSecond: number;
  private readonly costlyMs: number;
  private readonly demotionMs: number;
  private readonly now: () => number;
  private readonly cpu: () => number;
  private readonly accounts = new Map<string, Account>();
  private readonly queue: Array<{ run: () => void; since: number }> = [];
  private draining = false;
  private readonly demotedShare: number;
  private readonly demotedMaxWaitMs: number;
  // Token bucket of demoted evaluation time (ms): refills at demotedShare ms per ms, holds at most DEMOTED_BURST_MS.
  private demotedCredit = DEMOTED_BURST_MS;
  private demotedCreditAt = 0;

  constructor(options: FairnessOptions = {}) {
    this.budget = options.budget ?? DEFAULT_BUDGET;
    this.demotedBudget = options.demotedBudget ?? demoted(this.budget);
    this.slowMs = options.slowMs ?? 25;
    this.shareMsPerSecond = options.shareMsPerSecond ?? 250;
    this.costlyMs = options.costlyMs ?? 2;
    this.demotionMs = options.demotionMs ?? 60_000;
    this.now = options.now ?? (() => performance.now());
    this.cpu = options.cpu ?? cpuMs;
    this.demotedShare = options.demotedShare ?? 0.25;
    if (!(this.demotedShare > 0 && this.demotedShare <= 1))
      throw new RangeError(`demotedShare must be above 0 and at most 1, not ${this.demotedShare}`);
    this.demotedMaxWaitMs = options.demotedMaxWaitMs ?? 2_000;
    this.demotedCreditAt = this.now();
  }

  /** True while the namespace ('' = cluster-scoped) is demoted. */
  isDemoted(namespace: string): boolean {
    const a = this.accounts.get(namespace);
    return a !== undefined && a.demotedUntil > this.now();
  }

  /** Namespaces demoted right now. */
  demotedCount(): number {
    const now = this.now();
    let n = 0;
    for (const a of this.accounts.values()) if (a.demotedUntil > now) n++;
    return n;
  }

  /**
   * Evaluates `evaluate` for a request of `namespace` with a fresh budget: at once, or queued when the namespace is
   * demoted; then books its cost (see record). Rejects with what `evaluate` throws.
   */
  run<T>(namespace: string, evaluate: (budget: RequestBudget) => T): Promise<FairRun<T>> {
    if (!this.isDemoted(namespace)) {
      try {
        return Promise.resolve(this.evaluate(namespace, this.budget, false, evaluate));
      } catch (err) {
        return Promise.reject(errorOf(err));
      }
    }
    return new Promise((resolve, reject) => {
      this.queue.push({
        since: this.now(),
        run: () => {
          try {
            resolve(this.evaluate(namespace, this.demotedBudget, true, evaluate));
          } catch (err) {
            reject(errorOf(err));
          }
        },
      });
      this.drain();
    });
  }

  // The budget starts when evaluation does, not while the request waits in the queue. A rule's share is a tenth of
  // the configured budget, at most half of a demoted one: a rule that runs out of it fails alone, and does not
  // exhaust the request (what demotes for "budget exhausted"). The namespace is charged the evaluation's CPU time
  // (synchronous, on this thread), never more than its wall time: time the machine gave to other processes or
  // threads is nobody's doing here.
  private evaluate<T>(
    namespace: string,
    limits: BudgetLimits,
    demoted: boolean,
    evaluate: (budget: RequestBudget) => T,
  ): FairRun<T> {
    const budget = new RequestBudget(
      limits,
      { now: this.now, cpu: this.cpu },
      ruleShareOf(limits, this.budget),
    );
    const wallFrom = this.now();
    const cpuFrom = this.cpu();
    let value: T;
    try {
      value = evaluate(budget);
    } catch (err) {
      this.book(namespace, this.spent(wallFrom, cpuFrom).cpuMs, demoted, budget);
      throw err;
    }
    const spent = this.spent(wallFrom, cpuFrom);
    const demotion = this.book(namespace, spent.cpuMs, demoted, budget);
    return { value, budget, demoted, demotion, ...spent };
  }

  // The time since the two readings: CPU time at most the wall time (a process clock counts other threads too).
  private spent(wallFrom: number, cpuFrom: number): { cpuMs: number; wallMs: number } {
    const wallMs = this.now() - wallFrom;
    if (wallMs < CPU_READ_FROM_MS) return { cpuMs: wallMs, wallMs };
    return { cpuMs: Math.min(this.cpu() - cpuFrom, wallMs), wallMs };
  }

  // An evaluation's CPU time: against its namespace, and against the demoted share when it ran demoted.
  private book(
    namespace: string,
    ms: number,
    demoted: boolean,
    budget: RequestBudget,
  ): DemotionReason | null {
    if (demoted) this.demotedCredit -= ms;
    return this.record(namespace, ms, budget.exhausted !== null);
  }

  /**
   * Books one evaluation's CPU time (ms) against its namespace; returns why the namespace was demoted when this
   * request (newly or again) demotes it, else null.
   */
  record(namespace: string, ms: number, exhausted: boolean): DemotionReason | null {
    const now = this.now();
    let a = this.accounts.get(namespace);
    if (!a) {
      a = { windowStart: now, windowMs: 0, windowCount: 0, demotedUntil: 0 };
      this.accounts.set(namespace, a);
      if (this.accounts.size > 1024) this.prune(now);
    }
    if (now - a.windowStart >= 1000) {
      a.windowStart = now;
      a.windowMs = 0;
      a.windowCount = 0;
    }
    a.windowMs += ms;
    a.windowCount++;
    const reason: DemotionReason | null = exhausted
      ? 'budget exhausted'
      : ms > this.slowMs
        ? 'slow request'
        : a.windowMs > this.shareMsPerSecond && a.windowMs / a.windowCount > this.costlyMs
          ? 'too much evaluation time'
          : null;
    if (reason) a.demotedUntil = now + this.demotionMs;
    return reason;
  }

  // Accounts of namespaces neither demoted nor active in the last second carry nothing worth keeping.
  private prune(now: number): void {
    for (const [ns, a] of this.accounts) {
      if (a.demotedUntil <= now && now - a.windowStart >= 1000) this.accounts.delete(ns);
    }
  }

  // One queued evaluation per macrotask: the I/O of other requests is handled between two of them. And no more
  // than demotedShare of the time: each demoted evaluation may take its whole small budget (a namespace's rules each
  // run up to their share), so without a limit a hammered demoted namespace would take most of the loop.
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    const step = () => {
      if (this.queue.length === 0) {
        this.draining = false;
        return;
      }
      const now = this.now();
      this.demotedCredit = Math.min(
        DEMOTED_BURST_MS,
        this.demotedCredit + (now - this.demotedCreditAt) * this.demotedShare,
      );
      this.demotedCreditAt = now;
      // Pacing delays, never drops: the API server would admit a request that times out here unpatched.
      const waited = now - this.queue[0].since;
      if (this.demotedCredit < 0 && waited < this.demotedMaxWaitMs) {
        const refilled = Math.ceil(-this.demotedCredit / this.demotedShare);
        setTimeout(step, Math.min(refilled, this.demotedMaxWaitMs - waited));
        return;
      }
      this.queue.shift()?.run();
      setImmediate(step);
    };
    setImmediate(step);
  }
}
