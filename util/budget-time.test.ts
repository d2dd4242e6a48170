import {
  BUDGET_CHECK_STEPS,
  FIRST_CPU_LOOK,
  MIN_GIVEN_BACK_MS,
  RequestBudget,
  RULE_TIMED_AFTER_STEPS,
  RuleBudgetExhaustedError,
} from './budget';

// The budget's time is the CPU time of the evaluating thread (util/cpu-clock.ts): a busy machine stretches the wall
// clock, not the budget. These tests move both clocks by hand: run() is time the thread had the CPU, wait() time it
// did not. util/budget-clocks.test.ts runs the real clocks.
function clocks() {
  let wall = 1000;
  let cpu = 50;
  const reads = { wall: 0, cpu: 0 };
  return {
    now: () => (reads.wall++, wall),
    cpu: () => (reads.cpu++, cpu),
    run: (ms: number) => {
      wall += ms;
      cpu += ms;
    },
    wait: (ms: number) => {
      wall += ms;
    },
    // Another thread of the process ran meanwhile: a process clock (Node 20's) counts it, the thread's does not.
    others: (ms: number) => {
      cpu += ms;
    },
    reads,
  };
}

// Charges one rule's worth of steps, enough that its own clock starts.
function realWork(b: RequestBudget): void {
  b.charge(RULE_TIMED_AFTER_STEPS);
}

describe('the request counts CPU time', () => {
  test('the time is looked at by check(), and by charge() once per BUDGET_CHECK_STEPS steps', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 50 }, c);
    b.check();
    c.run(51);
    // Small charges do not read a clock...
    const before = c.reads.wall;
    for (let i = 0; i < BUDGET_CHECK_STEPS - 1; i++) b.charge(1);
    expect(c.reads.wall).toBe(before);
    // ...the one that completes a batch does, and finds the time spent.
    expect(() => b.charge(1)).toThrow(
      /^request budget exhausted: evaluation took more than 50 ms of CPU time$/,
    );
  });

  test('on a busy machine (wall time without CPU time) the request does not run out', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 50 }, c);
    // The first look at the CPU clock comes with the first check after FIRST_CPU_LOOK of the time (6.25 ms): until
    // then the wall time counts (here 7 ms), after that only CPU time.
    c.run(7);
    b.check();
    for (let i = 0; i < 20; i++) {
      c.wait(30);
      c.run(2);
      b.check();
    }
    // 47 ms of CPU over 647 ms of wall time: within the 50 ms.
    c.run(2);
    b.check();
    c.run(2);
    expect(() => b.check()).toThrow(/took more than 50 ms of CPU time/);
  });

  test('a process clock (Node 20) counts other threads too: the request is charged at most its wall time', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    // 12 rules of 8 ms of real work each (each reads the CPU clock when its own clock starts), while another thread
    // of the process spun as long: 96 ms of the request's own time, 192 ms on a process clock.
    for (let i = 0; i < 12; i++) {
      b.beginRule();
      realWork(b);
      c.run(8);
      c.others(8);
      b.check();
      b.endRule();
    }
    expect(b.exhausted).toBeNull();
    b.beginRule();
    realWork(b);
    c.run(5);
    expect(() => b.check()).toThrow(
      /^request budget exhausted: evaluation took more than 100 ms of CPU time/,
    );
  });

  test('a small budget (a demoted request) reads the CPU clock at its start: only CPU time counts', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 5 }, c);
    expect(c.reads.cpu).toBe(1);
    c.wait(30);
    c.run(4);
    b.check();
    c.run(2);
    expect(() => b.check()).toThrow(/took more than 5 ms of CPU time/);
  });

  test('the CPU clock (a system call) is read only once the wall clock says the limit could be near', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    // An ordinary request: rules checked at every match, all within the first FIRST_CPU_LOOK of the time.
    for (let i = 0; i < 50; i++) {
      b.beginRule();
      b.charge(140);
      c.run(0.1);
      b.check();
      b.endRule();
    }
    expect(c.reads.cpu).toBe(0);
    // Past FIRST_CPU_LOOK of the time on the wall clock, the CPU clock is read, and then not again until the limit
    // could have been reached.
    c.wait(100 * FIRST_CPU_LOOK);
    b.check();
    expect(c.reads.cpu).toBe(1);
    c.run(10);
    b.check();
    expect(c.reads.cpu).toBe(1);
  });

  test('before the first CPU reading the request is taken to have had the CPU: a busy start costs at most FIRST_CPU_LOOK', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    // 12.5 ms of wall time, 1 ms of it CPU time: counted as 12.5 ms.
    c.wait(11.5);
    c.run(1);
    b.check();
    c.run(87);
    b.check();
    c.run(1);
    expect(() => b.check()).toThrow(/took more than 100 ms of CPU time/);
  });

  test('restart() starts the time afresh: what came before (preparing the object) does not count', () => {
    for (const ms of [100, 5]) {
      const c = clocks();
      const b = new RequestBudget({ steps: 1e9, ms }, c);
      c.run(ms * 3);
      b.restart();
      c.run(ms * 0.9);
      b.check();
      c.run(ms * 0.2);
      expect(() => b.check()).toThrow(`took more than ${ms} ms of CPU time`);
    }
  });

  test('an untimed budget reads no clock after its start', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1_000_000, ms: Infinity }, c);
    expect(c.reads).toEqual({ wall: 0, cpu: 0 });
    b.beginRule();
    b.charge(50_000);
    b.check();
    b.endRule();
    expect(c.reads).toEqual({ wall: 0, cpu: 0 });
  });

  test('reserve() holds back a share of the time until release(), counted from release() at least', () => {
    const c = clocks();
    const t = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    t.reserve(0.25);
    c.run(76);
    expect(() => t.check()).toThrow(
      /^request budget exhausted: Patch rules took more than 75 of 100 ms of CPU time/,
    );
    t.release();
    t.check();
    c.run(24);
    t.check();
    c.run(2);
    expect(() => t.check()).toThrow(/evaluation took more than 100 ms of CPU time/);
    expect(t.exhausted).toMatch(/Patch rules took more than 75 of 100 ms/);

    // The Patch phase overran by far (one long operation): the Reject phase still gets its 25 ms from release().
    const late = clocks();
    const u = new RequestBudget({ steps: 1e9, ms: 100 }, late);
    u.reserve(0.25);
    late.run(140);
    expect(() => u.check()).toThrow(/Patch rules took more than 75 of 100 ms/);
    u.release();
    late.run(24);
    u.check();
    late.run(2);
    expect(() => u.check()).toThrow(/evaluation took more than 100 ms of CPU time/);
  });
});

describe("a rule's share of CPU time", () => {
  test('a rule is timed once it has spent RULE_TIMED_AFTER_STEPS steps itself, on CPU time from its start', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    c.run(20);
    b.check();
    // An ordinary rule (few steps) is never timed, however slow its first run.
    b.beginRule();
    b.charge(140);
    c.run(15);
    b.check();
    b.endRule();
    b.beginRule();
    c.run(5);
    b.charge(RULE_TIMED_AFTER_STEPS - 1);
    b.check();
    // Its clock starts with its real work, and counts the 5 ms it took so far.
    b.charge(1);
    c.wait(40);
    c.run(4);
    b.check();
    c.run(2);
    expect(() => b.check()).toThrow(
      /^rule budget exhausted: took more than 10 ms of CPU time \(one rule's share\)$/,
    );
    b.endRule();
    expect(b.exhausted).toBeNull();
    b.check();
  });

  test("a rule's overshoot is given back to the request: the rules after it keep their time", () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    b.beginRule();
    realWork(b);
    // One operation that did not check in time: 70 ms of CPU, 60 past its share.
    c.run(70);
    expect(() => b.check()).toThrow(RuleBudgetExhaustedError);
    b.endRule();
    // The request has used 10 ms (the rule's share), not 70: the next rules have the other 90.
    for (let i = 0; i < 8; i++) {
      b.beginRule();
      c.run(10);
      b.check();
      b.endRule();
    }
    c.run(9);
    b.check();
    c.run(2);
    expect(() => b.check()).toThrow(/^request budget exhausted/);
  });

  test('what is given back is at most the request time in all (and at least MIN_GIVEN_BACK_MS)', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    for (let i = 0; i < 2; i++) {
      b.beginRule();
      realWork(b);
      c.run(90);
      expect(() => b.check()).toThrow(RuleBudgetExhaustedError);
      b.endRule();
    }
    // 180 ms used, 80 + 20 given back: the request has used 80 ms.
    c.run(19);
    b.check();
    c.run(2);
    expect(() => b.check()).toThrow(/^request budget exhausted/);

    // A demoted request (5 ms) gets back up to MIN_GIVEN_BACK_MS.
    const d = clocks();
    const small = new RequestBudget({ steps: 1e9, ms: 5 }, d, { steps: 1e9, ms: 2 });
    small.beginRule();
    realWork(small);
    d.run(MIN_GIVEN_BACK_MS + 1);
    expect(() => small.check()).toThrow(RuleBudgetExhaustedError);
    small.endRule();
    small.beginRule();
    realWork(small);
    d.run(1.9);
    small.check();
    small.endRule();
    d.run(1);
    small.check();
    d.run(0.2);
    expect(() => small.check()).toThrow(/^request budget exhausted/);
  });

  test('while the process does not have the CPU, neither a rule nor the request runs out', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    b.beginRule();
    realWork(b);
    c.wait(500);
    c.run(2);
    b.check();
    // 8 ms of CPU left to the rule: its share ends 8 ms of CPU later, not before.
    c.wait(50);
    c.run(7);
    b.check();
    c.run(2);
    expect(() => b.check()).toThrow(RuleBudgetExhaustedError);
    b.endRule();
    expect(b.exhausted).toBeNull();
  });

  test('when the time runs out during a rule that did little work but took most of it, its time goes back', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    c.run(30);
    b.check();
    // Few steps (not timed), most of the time: a garbage collection the rule before left, say. Not its doing.
    b.beginRule();
    b.charge(100);
    c.wait(300);
    c.run(75);
    b.check();
    b.endRule();
    // The request has used 30 ms: the next rules have the other 70.
    b.beginRule();
    c.run(69);
    b.check();
    b.endRule();
    c.run(2);
    expect(() => b.check()).toThrow(/^request budget exhausted/);
  });

  test('when the time runs out outside the rules, the request ran out', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    c.run(60);
    b.check();
    b.beginRule();
    realWork(b);
    c.run(5);
    b.check();
    b.endRule();
    // Outside any rule too.
    c.run(36);
    expect(() => b.check()).toThrow(
      /^request budget exhausted: evaluation took more than 100 ms of CPU time/,
    );
  });

  test("when the request's limit comes before the rule's share ends, the request ran out", () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    c.run(95);
    b.check();
    b.beginRule();
    realWork(b);
    c.run(3);
    b.check();
    c.run(8);
    let err: unknown;
    try {
      b.check();
    } catch (e) {
      err = e;
    }
    expect(err).not.toBeInstanceOf(RuleBudgetExhaustedError);
    expect(b.exhausted).toMatch(/evaluation took more than 100 ms/);
  });
});

describe('a rule that runs out of its steps', () => {
  test('gives back the time it took beyond its share too (work it did before charging it)', () => {
    const c = clocks();
    const b = new RequestBudget({ steps: 1e9, ms: 100 }, c);
    b.beginRule();
    realWork(b);
    // 60 ms of work paid for afterwards, past the rule's steps.
    c.run(60);
    expect(() => b.charge(1e9)).toThrow(/more than 100000000 evaluation steps \(one rule's share\)/);
    b.endRule();
    // The request has used the rule's 10 ms: the next rules have the other 90.
    b.beginRule();
    c.run(89);
    b.check();
    b.endRule();
    c.run(2);
    expect(() => b.check()).toThrow(/^request budget exhausted/);
  });
});
