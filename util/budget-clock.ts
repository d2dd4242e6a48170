/** Clocks a RequestBudget reads (tests pass their own). */
export interface BudgetClocks {
  /** Wall clock in ms: tells when the CPU clock is worth reading. */
  now?: () => number;
  /**
   * CPU time in ms: what the request's time and a rule's share count. Default util/cpu-clock.ts cpuMs, the
   * evaluating thread's own where the runtime has a per-thread clock, else the process's.
   */
  cpu?: () => number;
}
