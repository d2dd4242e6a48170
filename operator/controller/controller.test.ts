import { getEventListeners } from 'node:events';
import { Controller, ReconcileResult } from './controller';
import { memoryLogger } from '../../util/logger';
import { KubeApiError } from '../../kube/kube';

/** A controller whose reconcile records each key it runs (throwing for keys in `failing`), on jest's fake clock. */
function controller(
  options: {
    failing?: Set<string>;
    /** Keys whose reconcile the API server does not answer (connection refused). */
    unanswered?: Set<string>;
    result?: (key: string, run: number) => ReconcileResult | void;
    ready?: Promise<void>;
  } = {},
) {
  const runs: Array<{ key: string; at: number }> = [];
  const { logger, lines } = memoryLogger();
  const c = new Controller(
    'test',
    {
      reconcile: async (key) => {
        runs.push({ key, at: Date.now() });
        if (options.failing?.has(key)) throw new Error(`${key} failed`);
        if (options.unanswered?.has(key))
          throw new KubeApiError('connect ECONNREFUSED 127.0.0.1:6443', 0, 'ECONNREFUSED');
        return options.result?.(key, runs.filter((r) => r.key === key).length);
      },
    },
    {
      logger,
      ready: options.ready,
      backoff: { initialMs: 100, maxMs: 1_000, random: () => 0.999 },
      unansweredMaxMs: 250,
    },
  );
  return { c, runs, lines, keys: () => runs.map((r) => r.key) };
}

beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
afterEach(() => jest.useRealTimers());

describe('Controller', () => {
  it('reconciles nothing before it is started and ready, then each queued key once, in the order they came', async () => {
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const { c, keys } = controller({ ready });
    c.enqueue('a');
    c.enqueue('b');
    c.enqueue('a');
    await jest.advanceTimersByTimeAsync(10);
    expect(keys()).toEqual([]);
    c.start();
    await jest.advanceTimersByTimeAsync(10);
    expect(keys()).toEqual([]);
    markReady();
    await c.idle();
    expect(keys()).toEqual(['a', 'b']);
  });

  it('queues a key again when it is asked for while it is being reconciled', async () => {
    let asked = false;
    const { c, keys } = controller({
      result: () => {
        if (!asked) c.enqueue('a');
        asked = true;
      },
    });
    c.start();
    c.enqueue('a');
    await c.idle();
    expect(keys()).toEqual(['a', 'a']);
  });

  it('enqueueAfter runs the key after the delay, not before, and keeps the earliest time asked for', async () => {
    const { c, runs } = controller();
    c.start();
    c.enqueueAfter('a', 100);
    c.enqueueAfter('a', 300);
    c.enqueueAfter('b', 300);
    c.enqueueAfter('b', 50);
    await jest.advanceTimersByTimeAsync(49);
    expect(runs).toEqual([]);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toEqual([
      { key: 'b', at: 1_000_050 },
      { key: 'a', at: 1_000_100 },
    ]);
  });

  it('debounces a burst of triggers into one run after the quiet time, but no later than the longest delay', async () => {
    const { c, runs } = controller();
    c.start();
    for (let i = 0; i < 10; i++) {
      c.enqueueDebounced('scope', 200, 1_000);
      await jest.advanceTimersByTimeAsync(150);
    }
    // Triggers every 150 ms never leave 200 ms of quiet: the longest delay (1 s after the first) fires it.
    expect(runs).toEqual([{ key: 'scope', at: 1_001_000 }]);
    c.enqueueDebounced('scope', 200, 1_000);
    await jest.advanceTimersByTimeAsync(200);
    expect(runs.map((r) => r.at)).toEqual([1_001_000, 1_001_700]);
  });

  it("retries a reconcile that throws after the key's own growing backoff, and starts over after a success", async () => {
    const failing = new Set(['a']);
    const { c, runs, lines } = controller({ failing });
    c.start();
    c.enqueue('a');
    await jest.advanceTimersByTimeAsync(1_000);
    // 100, then 200, 400, then the 1 s cap (jitter at its top: the full delay).
    expect(runs.map((r) => r.at - 1_000_000)).toEqual([0, 100, 300, 700]);
    expect(lines.filter((l) => l.message === 'test reconcile failed; retrying')).toHaveLength(4);
    failing.clear();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toHaveLength(5);
    failing.add('a');
    c.enqueue('a');
    await jest.advanceTimersByTimeAsync(99);
    expect(runs).toHaveLength(6);
    await jest.advanceTimersByTimeAsync(1);
    expect(runs).toHaveLength(7);
  });

  it('retries a reconcile the API server did not answer within unansweredMaxMs, however often it failed', async () => {
    const unanswered = new Set(['a']);
    const { c, runs } = controller({ unanswered, failing: new Set(['b']) });
    c.start();
    c.enqueue('a');
    c.enqueue('b');
    await jest.advanceTimersByTimeAsync(1_500);
    const at = (key: string) => runs.filter((r) => r.key === key).map((r) => r.at - 1_000_000);
    // a: 100, 200, then the 250 ms cap for an unanswered call; b (answered, failed): 100, 200, 400, then 1 s.
    expect(at('a')).toEqual([0, 100, 300, 550, 800, 1050, 1300]);
    expect(at('b')).toEqual([0, 100, 300, 700, 1500]);
    // The API server is back: the next try succeeds and nothing more is queued.
    unanswered.clear();
    await jest.advanceTimersByTimeAsync(250);
    expect(at('a')).toHaveLength(8);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(at('a')).toHaveLength(8);
    await c.stop();
  });

  it('leaves no listener on its stop signal however often it is kicked', async () => {
    const { c, runs } = controller({ ready: Promise.resolve() });
    c.start();
    for (let i = 0; i < 50; i++) {
      c.enqueue(`k${i}`);
      await c.idle();
    }
    expect(runs).toHaveLength(50);
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
    await c.stop();
  });

  it('reconciles again when the reconcile asks for it', async () => {
    const { c, runs } = controller({ result: (_key, run) => (run < 3 ? { requeueAfter: 250 } : undefined) });
    c.start();
    c.enqueue('a');
    await jest.advanceTimersByTimeAsync(5_000);
    expect(runs.map((r) => r.at - 1_000_000)).toEqual([0, 250, 500]);
  });

  it('drops pending keys and timers when stopped, and takes none after', async () => {
    const { c, runs } = controller();
    c.start();
    c.enqueueAfter('a', 100);
    c.enqueueDebounced('b', 100);
    await c.stop();
    c.enqueue('c');
    c.enqueueAfter('d', 100);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toEqual([]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('stops while it still waits to be ready', async () => {
    const { c, runs } = controller({ ready: new Promise<void>(() => undefined) });
    c.start();
    c.enqueue('a');
    await jest.advanceTimersByTimeAsync(10);
    await c.stop();
    expect(runs).toEqual([]);
  });
});
