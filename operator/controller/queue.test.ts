import { KeyedQueue } from './queue';
import { messageOf } from '../../util/errors';

/** A queue whose work records each key it runs (and throws for keys in `failing`), on jest's fake clock. */
function queue(options: { retryMs?: number; failing?: Set<string> } = {}) {
  const runs: Array<{ key: string; at: number }> = [];
  const errors: string[] = [];
  const controller = new AbortController();
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const q = new KeyedQueue(
    async (key) => {
      runs.push({ key, at: Date.now() });
      if (options.failing?.has(key)) throw new Error(`${key} failed`);
    },
    {
      ready,
      signal: controller.signal,
      onError: (key, err) => errors.push(`${key}: ${messageOf(err)}`),
      retryMs: options.retryMs,
    },
  );
  return { q, runs, errors, controller, markReady, keys: () => runs.map((r) => r.key) };
}

beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
afterEach(() => jest.useRealTimers());

describe('KeyedQueue', () => {
  it('runs nothing before ready, then each queued key once, in the order they came', async () => {
    const { q, keys, markReady } = queue();
    q.add('a');
    q.add('b');
    q.add('a');
    await jest.advanceTimersByTimeAsync(0);
    expect(keys()).toEqual([]);
    markReady();
    await q.idle();
    expect(keys()).toEqual(['a', 'b']);
  });

  it('requeueAfter queues the key again after the delay, not before', async () => {
    const { q, runs, markReady } = queue();
    markReady();
    q.requeueAfter('a', 100);
    await jest.advanceTimersByTimeAsync(99);
    expect(runs).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(runs).toEqual([{ key: 'a', at: 1_000_100 }]);
  });

  it('keeps one pending requeue per key, at the earliest time asked for', async () => {
    const { q, runs, markReady } = queue();
    markReady();
    q.requeueAfter('a', 100);
    q.requeueAfter('a', 300);
    q.requeueAfter('b', 300);
    q.requeueAfter('b', 50);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toEqual([
      { key: 'b', at: 1_000_050 },
      { key: 'a', at: 1_000_100 },
    ]);
  });

  it('retries work that throws retryMs later, saying why', async () => {
    const failing = new Set(['a']);
    const { q, runs, errors, markReady } = queue({ retryMs: 500, failing });
    markReady();
    q.add('a');
    await jest.advanceTimersByTimeAsync(499);
    expect(runs).toHaveLength(1);
    expect(errors).toEqual(['a: a failed']);
    failing.clear();
    await jest.advanceTimersByTimeAsync(1);
    expect(runs.map((r) => r.at)).toEqual([1_000_000, 1_000_500]);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(runs).toHaveLength(2);
  });

  it('drops pending requeues when stopped', async () => {
    const { q, runs, controller, markReady } = queue();
    markReady();
    q.requeueAfter('a', 100);
    controller.abort();
    q.requeueAfter('b', 100);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toEqual([]);
    expect(jest.getTimerCount()).toBe(0);
  });
});
