import { Worker } from 'node:worker_threads';
import { noThreadClock } from './cpu-clock';

// Helpers for tests that run the real CPU clocks (util/cpu-clock.ts): a thread off the CPU, a thread spinning.

const WAIT = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocks this thread for `ms` without using the CPU: what an evaluation sees when the machine gives its core to
 * something else (the wall time runs, its CPU time does not).
 */
export function offCpu(ms: number): void {
  Atomics.wait(WAIT, 0, 0, ms);
}

/** A worker thread of this process spinning until terminated; resolves once it runs. */
export function spinningWorker(): Promise<Worker> {
  const worker = new Worker(
    "require('node:worker_threads').parentPort.postMessage('spinning'); for (;;) {}",
    {
      eval: true,
    },
  );
  return new Promise((resolve, reject) => {
    worker.once('message', () => resolve(worker));
    worker.once('error', reject);
  });
}

/**
 * `it` where the runtime has a per-thread CPU clock; else `it.skip`, the reason (naming the Node version) in the
 * test's title and on stderr once per suite (`what`).
 */
export function threadClockOnly(
  what: string,
): (name: string, fn: jest.ProvidesCallback, timeout?: number) => void {
  const skipped = noThreadClock();
  if (skipped) process.stderr.write(`${what} skipped: ${skipped}\n`);
  return (name, fn, timeout) =>
    skipped === null ? it(name, fn, timeout) : it.skip(`${name}: skipped, ${skipped}`, fn);
}
