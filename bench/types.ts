/** One row of the benchmark table. */
export interface BenchRow {
  suite: string;
  case: string;
  /** Operations per second, or null where the row reports something else. */
  opsPerSec: number | null;
  /** Free-form extra columns: latency percentiles, ratios, memory. */
  notes?: string;
  /** The target this row is held to, e.g. ">= 0.5x floor". */
  target?: string;
  /** Whether the target was met (only with target). */
  pass?: boolean;
}

/** A benchmark suite: files named `*.bench.ts` in bench/ export `run` (given the --only names, [] = all). */
export type BenchSuite = (only: readonly string[]) => Promise<BenchRow[]>;

/** Times fn over at least minMs and returns operations per second. */
export function measure(fn: () => void, minMs = 300): number {
  for (let i = 0; i < 1000; i++) fn(); // warm up the JIT
  let iterations = 0;
  let batch = 1000;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < batch; i++) fn();
    iterations += batch;
    elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    batch = Math.min(batch * 2, 1_000_000);
  }
  return (iterations / elapsed) * 1000;
}
