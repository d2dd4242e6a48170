import { performance } from 'node:perf_hooks';
import { NamespaceFairness } from './fairness';
import { CPU_CLOCK, cpuClock, cpuMs } from '../util/cpu-clock';
import { memoryLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { generateCertificates } from './certs';
import { startTestServer } from './testing';
import { offCpu, spinningWorker, threadClockOnly } from '../util/testing';

// An evaluation that holds the event loop for `ms` of CPU time, as a rule running up to its share does (the CPU time
// is what fairness charges; on a busy machine it takes longer on the wall clock).
function busy(ms: number): void {
  const until = cpuMs() + ms;
  while (cpuMs() < until) {
    /* spin */
  }
}

describe('NamespaceFairness: demoted evaluations share the process', () => {
  it('take together at most demotedShare of the time, after a short burst', async () => {
    const f = new NamespaceFairness({ demotedShare: 0.25, demotedMaxWaitMs: 60_000 });
    f.record('evil', 0, true);
    const started = performance.now();
    // 24 evaluations of 5 ms (the demoted budget): 120 ms of work, 20 ms of it as the burst.
    await Promise.all(Array.from({ length: 24 }, () => f.run('evil', () => busy(5))));
    const elapsed = performance.now() - started;
    // Without pacing the queue is done in about 120 ms; at a quarter of the time it needs (120 - 20) / 0.25.
    expect(elapsed).toBeGreaterThanOrEqual(0.9 * ((120 - 20) / 0.25));
  });

  it('leaves the rest to namespaces in good standing: theirs run at once while demoted ones wait', async () => {
    const f = new NamespaceFairness({ demotedShare: 0.1, demotedMaxWaitMs: 60_000 });
    f.record('evil', 0, true);
    const order: string[] = [];
    const evil = Array.from({ length: 10 }, (_, i) =>
      f.run('evil', () => (busy(5), order.push(`evil-${i}`))),
    );
    const good = new Promise((resolve) =>
      setTimeout(() => resolve(f.run('good', () => order.push('good'))), 120),
    );
    await Promise.all([...evil, good]);
    // Unpaced, 10 demoted evaluations of 5 ms are done long before a request 120 ms later; paced at a tenth of
    // the time they take (50 - 20) / 0.1 = 300 ms.
    expect(order.indexOf('good')).toBeLessThan(order.length - 1);
    expect(order.filter((o) => o.startsWith('evil'))).toHaveLength(10);
  });

  it('never holds a queued evaluation longer than demotedMaxWaitMs, whatever the share', async () => {
    const f = new NamespaceFairness({ demotedShare: 0.001, demotedMaxWaitMs: 100 });
    f.record('evil', 0, true);
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: 6 }, () => f.run('evil', () => busy(10))));
    // At a thousandth of the time, 40 ms beyond the burst would take 40 s; each waits 100 ms at most instead.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(runs.every((r) => r.demoted)).toBe(true);
  });

  it('refuses a share that is not a part of the time', () => {
    expect(() => new NamespaceFairness({ demotedShare: 0 })).toThrow(/demotedShare/);
    expect(() => new NamespaceFairness({ demotedShare: 1.5 })).toThrow(/demotedShare/);
    expect(new NamespaceFairness({ demotedShare: 1 })).toBeInstanceOf(NamespaceFairness);
  });
});

describe('NamespaceFairness charges CPU time, not wall time', () => {
  // Stand-in clocks moved by hand: run() is time the evaluating thread had the CPU, wait() time it did not.
  function clocks() {
    let wall = 0;
    let cpu = 0;
    return {
      now: () => wall,
      cpu: () => cpu,
      run: (ms: number) => ((wall += ms), (cpu += ms)),
      wait: (ms: number) => (wall += ms),
      others: (ms: number) => (cpu += ms),
    };
  }

  it('a cheap evaluation stretched by a busy machine does not demote its namespace; a costly one does', async () => {
    const c = clocks();
    const f = new NamespaceFairness({ now: c.now, cpu: c.cpu });
    // 1 ms of CPU over 100 ms of wall time: other processes had the core.
    const cheap = await f.run('innocent', () => (c.run(0.5), c.wait(99), c.run(0.5)));
    expect(cheap).toMatchObject({ demotion: null, cpuMs: 1, wallMs: 100 });
    expect(f.isDemoted('innocent')).toBe(false);
    const costly = await f.run('heavy', () => (c.run(26), c.wait(10)));
    expect(costly).toMatchObject({ demotion: 'slow request', cpuMs: 26, wallMs: 36 });
  });

  it('nor does a second of such requests, however long they wait; a second of costly ones does', async () => {
    const c = clocks();
    const f = new NamespaceFairness({ now: c.now, cpu: c.cpu });
    // 100 requests of 3 ms of wall time each, 0.2 ms of it CPU: 300 ms of wall time in a second, 20 ms of CPU.
    for (let i = 0; i < 100; i++) {
      const run = await f.run('innocent', () => (c.run(0.2), c.wait(2.8)));
      expect(run.demotion).toBeNull();
    }
    // 20 ms of CPU each (under a slow request's 25): demoted once they pass 250 ms within a second.
    for (let i = 0; i < 12; i++) expect((await f.run('heavy', () => c.run(20))).demotion).toBeNull();
    expect((await f.run('heavy', () => c.run(20))).demotion).toBe('too much evaluation time');
  });

  it('reads the CPU clock once for an evaluation under 1 ms (its wall time bounds its CPU time), twice after', async () => {
    const c = clocks();
    let reads = 0;
    const f = new NamespaceFairness({ now: c.now, cpu: () => (reads++, c.cpu()) });
    expect(await f.run('a', () => (c.run(0.125), c.wait(0.5)))).toMatchObject({
      cpuMs: 0.625,
      wallMs: 0.625,
    });
    expect(reads).toBe(1);
    expect(await f.run('a', () => (c.run(0.25), c.wait(1)))).toMatchObject({ cpuMs: 0.25, wallMs: 1.25 });
    expect(reads).toBe(3);
  });

  it("counts at most the wall time: a process clock (Node 20) also counts the process's other threads", async () => {
    const c = clocks();
    const f = new NamespaceFairness({ now: c.now, cpu: c.cpu });
    const run = await f.run('innocent', () => (c.run(10), c.others(40)));
    expect(run).toMatchObject({ demotion: null, cpuMs: 10, wallMs: 10 });
  });
});

describe('NamespaceFairness on the real clocks', () => {
  const threadOnly = threadClockOnly('fairness tests on the thread clock');

  threadOnly(
    'a busy event loop in another thread is not charged to a namespace whose rules are cheap',
    async () => {
      // The worker's loop spins while this one's evaluation is off the CPU, until the worker has had 30 ms of CPU
      // (at most 10 s): more than a slow request's 25 ms on the process's clock.
      const worker = await spinningWorker();
      try {
        const f = new NamespaceFairness();
        const processMs = cpuClock('process');
        const from = processMs();
        const until = performance.now() + 10_000;
        const run = await f.run('innocent', () => {
          while (processMs() - from < 30 && performance.now() < until) offCpu(5);
        });
        expect(processMs() - from).toBeGreaterThan(25);
        expect(run.wallMs).toBeGreaterThan(25);
        expect(run.demotion).toBeNull();
        expect(run.cpuMs).toBeLessThan(5);
      } finally {
        await worker.terminate();
      }
    },
  );
});

describe('the webhook server', () => {
  it("says once, at its start, when the runtime has no per-thread CPU clock (Node 20), naming Node's version", async () => {
    const { logger, lines } = memoryLogger();
    const certs = generateCertificates({ hosts: ['127.0.0.1'] });
    const server = await startTestServer(new RuleStore(), certs, { logger });
    await server.close();
    const warned = lines.filter((l) => l.level === 'warn' && /per-thread CPU clock/.test(String(l.message)));
    expect(warned.map((l) => l.message)).toEqual(
      CPU_CLOCK === 'thread'
        ? []
        : [
            `Node ${process.versions.node} has no per-thread CPU clock (process.threadCpuUsage, Node 24 has it): ` +
              "here the process CPU time is charged, at most the wall time: run Node 24 (the image's) to charge a " +
              "rule its own thread's CPU time",
          ],
    );
  });
});
