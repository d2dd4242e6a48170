/** Clocks a RequestBudget reads (tests pass their own). */
export interface BudgetClocks {
  /** Wall clock in ms: tells when the CPU clock is worth reading. */
  now?: () => number;
  /** CPU time of the process in ms: what the request's time and a rule's share count. */
  cpu?: () => number;
}

/** The CPU time of the process (user and system) in ms: a system call, read only when a limit could be reached. */
export function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
