import { CPU_CLOCK, cpuClock, cpuMs, noThreadClock } from './cpu-clock';
import { offCpu, spinningWorker, threadClockOnly } from './testing';

// The real clocks, no stand-ins: what the budget and fairness read on this runtime.

const processMs = cpuClock('process');

describe('cpuMs: the CPU clock the budget and fairness read', () => {
  it("is the thread's where process.threadCpuUsage exists; else the process's, and says so naming the version", () => {
    const has = typeof (process as { threadCpuUsage?: unknown }).threadCpuUsage === 'function';
    expect(CPU_CLOCK).toBe(has ? 'thread' : 'process');
    if (has) expect(noThreadClock()).toBeNull();
    else {
      expect(noThreadClock()).toContain(`Node ${process.versions.node} has no per-thread CPU clock`);
      expect(() => cpuClock('thread')).toThrow(`Node ${process.versions.node} has no per-thread CPU clock`);
    }
  });

  it('counts work on this thread to the microsecond, not only at scheduler ticks', () => {
    // Alone, RUSAGE_THREAD moves once per tick (1-10 ms); the budget's 2 ms shares need better.
    const steps: number[] = [];
    let last = cpuMs();
    const until = performance.now() + 100;
    while (performance.now() < until && steps.length < 200) {
      const now = cpuMs();
      if (now !== last) steps.push(now - last);
      last = now;
    }
    steps.sort((a, b) => a - b);
    expect(steps.length).toBeGreaterThan(20);
    expect(steps[steps.length >> 1]).toBeLessThan(0.2);
  });

  // On a process clock these depend on what the process's other threads (the garbage collector's) do meanwhile.
  const threadOnly = threadClockOnly('cpu-clock tests');

  threadOnly(`does not count time this thread is off the CPU`, () => {
    const wall = performance.now();
    const cpu = cpuMs();
    offCpu(50);
    expect(performance.now() - wall).toBeGreaterThanOrEqual(49);
    expect(cpuMs() - cpu).toBeLessThan(10);
  });

  threadOnly(`does not count another thread's work (a worker spinning beside this one)`, async () => {
    const worker = await spinningWorker();
    try {
      const cpu = cpuMs();
      const processFrom = processMs();
      // Until the worker has had 50 ms of CPU, however busy the machine (at most 10 s).
      const until = performance.now() + 10_000;
      while (processMs() - processFrom < 50 && performance.now() < until) offCpu(5);
      expect(processMs() - processFrom).toBeGreaterThanOrEqual(50);
      expect(cpuMs() - cpu).toBeLessThan(10);
    } finally {
      await worker.terminate();
    }
  });
});
