import { performance } from 'node:perf_hooks';
import { NamespaceFairness } from './fairness';

// An evaluation that holds the event loop for `ms`, as a rule running up to its share does.
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
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
