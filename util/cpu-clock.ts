// The CPU clock the budget and fairness read: the evaluating thread's own CPU time where the runtime has a
// per-thread clock (process.threadCpuUsage: getrusage(RUSAGE_THREAD), added in Node 23.9, so in 24 and later), else
// the whole process's (Node 20: process.cpuUsage, RUSAGE_SELF), which also counts garbage-collector helper threads,
// concurrent compilation, the libuv pool and any worker thread. @types/node 20 does not declare threadCpuUsage.

/** Which CPU time cpuMs() reads: the calling thread's own, or the whole process's (no per-thread clock). */
export type CpuClockKind = 'thread' | 'process';

type CpuUsageOf = () => NodeJS.CpuUsage;

const runtime = process as NodeJS.Process & { threadCpuUsage?: CpuUsageOf };

/** The clock this runtime has: 'thread' where process.threadCpuUsage exists, else 'process'. */
export const CPU_CLOCK: CpuClockKind = typeof runtime.threadCpuUsage === 'function' ? 'thread' : 'process';

// Linux brings a thread's CPU time (RUSAGE_THREAD) up to date only at a scheduler tick or a context switch, so alone
// it lags by up to a tick (4 ms at HZ=250): a rule that began just before a tick would be charged the time before
// it. Reading the process's time first (RUSAGE_SELF, which updates the calling thread's) makes it exact to the
// microsecond, for one more system call; both together cost about 2 us.
function threadMs(): number {
  process.cpuUsage();
  const u = (runtime.threadCpuUsage as CpuUsageOf).call(process);
  return (u.user + u.system) / 1000;
}

function processMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * The `kind` clock in ms (user and system time; one system call for the process's, two for the thread's: 1-2 us).
 * Throws when the runtime has no such clock (a thread clock on Node 20).
 */
export function cpuClock(kind: CpuClockKind): () => number {
  if (kind === 'process') return processMs;
  if (CPU_CLOCK !== 'thread')
    throw new Error(`Node ${process.versions.node} has no per-thread CPU clock (process.threadCpuUsage)`);
  return threadMs;
}

/**
 * CPU time in ms of the calling thread where the runtime can tell (CPU_CLOCK 'thread'), else of the whole process.
 * What a rule, a request and a namespace are charged.
 */
export const cpuMs: () => number = cpuClock(CPU_CLOCK);

/** Why a test of the per-thread clock cannot run here: names this Node's version; null where it can. */
export function noThreadClock(): string | null {
  return CPU_CLOCK === 'thread'
    ? null
    : `Node ${process.versions.node} has no per-thread CPU clock (process.threadCpuUsage, Node 24 has it): ` +
        'here the process CPU time is charged, at most the wall time';
}
