import { RequestBudget, RuleBudgetExhaustedError, RULE_TIMED_AFTER_STEPS } from './budget';
import { cpuClock } from './cpu-clock';
import { offCpu, spinningWorker, threadClockOnly } from './testing';

// The budget on the real clocks (util/budget-time.test.ts moves stand-in clocks by hand). A rule that does a little
// work at a time while its thread is mostly off the CPU: its own CPU time stays far under its share (10 ms) while
// 40 ms of wall time pass, as on a busy machine.

const LIMITS = { steps: 1e9, ms: 100 };
const RULE_WALL_MS = 40;

function work(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    /* the rule's own work */
  }
}

/** Runs one such rule under each budget at once; returns, for each, why its rule failed (null: it did not). */
function cheapRuleOffCpu(budgets: RequestBudget[]): Array<string | null> {
  const failed: Array<string | null> = budgets.map(() => null);
  const live = () => budgets.filter((_, i) => failed[i] === null);
  for (const b of budgets) b.beginRule();
  const until = performance.now() + RULE_WALL_MS;
  for (let round = 0; performance.now() < until; round++) {
    work(0.1);
    for (const b of live()) {
      try {
        b.charge(round === 0 ? RULE_TIMED_AFTER_STEPS : 1024);
      } catch (err) {
        if (!(err instanceof RuleBudgetExhaustedError)) throw err;
        failed[budgets.indexOf(b)] = err.message;
      }
    }
    offCpu(1);
  }
  for (const b of live()) b.check();
  for (const b of budgets) b.endRule();
  return failed;
}

describe("a rule's share counts the CPU time of the thread it runs on", () => {
  // On a process clock the garbage collector's threads, busy meanwhile, are charged to the rule too.
  const threadOnly = threadClockOnly('budget-clocks tests');

  threadOnly(`a cheap rule whose thread is off the CPU most of the time keeps its share`, () => {
    const [failed] = cheapRuleOffCpu([new RequestBudget(LIMITS)]);
    expect(failed).toBeNull();
  });

  threadOnly(`a worker thread spinning beside a cheap rule is not charged to it`, async () => {
    const worker = await spinningWorker();
    try {
      // The same rule under the default clock (the thread's) and under the process's, side by side: the worker's
      // CPU time is the process's, and takes the rule's share on that clock (or the test proves nothing).
      const [own, whole] = cheapRuleOffCpu([
        new RequestBudget(LIMITS),
        new RequestBudget(LIMITS, { cpu: cpuClock('process') }),
      ]);
      expect(whole).toMatch(/^rule budget exhausted: took more than 10 ms of CPU time/);
      expect(own).toBeNull();
    } finally {
      await worker.terminate();
    }
  });
});
