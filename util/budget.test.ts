import { compileJsonPath, JsonPathLimitError, MAX_VISITS } from '../jsonpath';
import { compileTemplate, TemplateRuntimeError } from '../template';
import {
  BUDGET_CHECK_STEPS,
  BudgetExhaustedError,
  RequestBudget,
  RuleBudgetExhaustedError,
  ruleShareOf,
} from './budget';

describe('RequestBudget', () => {
  test('steps run out: the charge that goes past the limit throws, and every later charge and check too', () => {
    const b = new RequestBudget({ steps: 10_000, ms: 1e9 });
    b.charge(9_999);
    expect(b.exhausted).toBeNull();
    b.charge(1);
    expect(() => b.charge(1)).toThrow(BudgetExhaustedError);
    expect(b.exhausted).toMatch(/more than 10000 evaluation steps/);
    expect(() => b.charge(0)).toThrow(/request budget exhausted/);
    expect(() => b.check()).toThrow(BudgetExhaustedError);
    expect(b.stepsLeft).toBe(0);
  });

  test('reserve() holds back a share of the steps until release(); exhausted stays set', () => {
    const b = new RequestBudget({ steps: 10_000, ms: 1e9 });
    b.reserve(0.25);
    b.charge(7_000);
    // One large charge past the held part: it throws, and does not eat into what is held back.
    expect(() => b.charge(100_000)).toThrow(/Patch rules used more than 7500 of 10000 evaluation steps/);
    expect(() => b.charge(0)).toThrow(BudgetExhaustedError);
    b.release();
    expect(b.stepsLeft).toBe(2_500);
    b.charge(2_500);
    expect(() => b.charge(1)).toThrow(/more than 10000 evaluation steps/);
    expect(b.exhausted).toMatch(/Patch rules used more than 7500/);
  });

  test('unlimited never runs out', () => {
    const b = RequestBudget.unlimited();
    for (let i = 0; i < 10; i++) b.charge(1e12);
    expect(() => b.check()).not.toThrow();
  });
});

describe("a rule's own share (issue 24)", () => {
  test('a tenth of the configured budget, at most 40% of the budget in force', () => {
    expect(ruleShareOf({ steps: 1_000_000, ms: 100 })).toEqual({ steps: 100_000, ms: 10 });
    // A demoted namespace's request: 50,000 steps and 5 ms.
    expect(ruleShareOf({ steps: 50_000, ms: 5 }, { steps: 1_000_000, ms: 100 })).toEqual({
      steps: 20_000,
      ms: 2,
    });
    expect(ruleShareOf({ steps: 1_000_000, ms: Infinity })).toEqual({ steps: 100_000, ms: Infinity });
  });

  test('a rule that spends its share fails alone: the request goes on, and the overshoot is not charged', () => {
    const b = new RequestBudget({ steps: 100_000, ms: 1e9 });
    b.beginRule();
    b.charge(9_000);
    // One large charge (paid before the work it stands for) past the rule's 10,000.
    expect(() => b.charge(500_000)).toThrow(RuleBudgetExhaustedError);
    expect(b.stepsLeft).toBe(90_000);
    expect(() => b.check()).toThrow(
      /rule budget exhausted: more than 10000 evaluation steps \(one rule's share\)/,
    );
    b.endRule();
    expect(b.exhausted).toBeNull();
    // The next rule has its own share.
    b.beginRule();
    b.charge(9_999);
    b.check();
    b.endRule();
    // Outside rules only the request's limit counts.
    b.charge(80_000);
    expect(() => b.charge(2)).toThrow(BudgetExhaustedError);
    expect(() => b.charge(0)).not.toThrow(RuleBudgetExhaustedError);
    expect(b.exhausted).toMatch(/request budget exhausted: more than 100000/);
  });

  test("when the request (or its Patch phase) ends before the rule's share, the request ran out", () => {
    const b = new RequestBudget({ steps: 100_000, ms: 1e9 });
    b.reserve(0.25);
    b.charge(70_000);
    b.beginRule();
    let err: unknown;
    try {
      b.charge(8_000);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BudgetExhaustedError);
    expect(err).not.toBeInstanceOf(RuleBudgetExhaustedError);
    expect(b.exhausted).toMatch(/Patch rules used more than 75000/);
  });

  test('unlimited and untimed budgets give rules no limit they can reach', () => {
    const u = RequestBudget.unlimited();
    u.beginRule();
    u.charge(1e12);
    u.check();
    u.endRule();
    const untimed = new RequestBudget({ steps: 1_000_000, ms: Infinity });
    untimed.beginRule();
    untimed.charge(99_999);
    untimed.check();
    expect(() => untimed.charge(2)).toThrow(RuleBudgetExhaustedError);
  });
});

describe('selects charge the request budget', () => {
  const object = { items: Array.from({ length: 20_000 }, (_, i) => ({ n: i })) };

  test('visits are charged, and a select without a budget charges nothing', () => {
    const select = compileJsonPath('$.items[? @.n > 19990].n');
    const b = new RequestBudget({ steps: 1e9, ms: 1e9 });
    expect(select.select(object, b).map((r) => r.value)).toEqual([
      19991, 19992, 19993, 19994, 19995, 19996, 19997, 19998, 19999,
    ]);
    const spent = 1e9 - b.stepsLeft;
    expect(spent).toBeGreaterThanOrEqual(20_000);
    expect(spent).toBeLessThan(20_000 + 2 * BUDGET_CHECK_STEPS);
    expect(select.select(object).length).toBe(9);
  });

  test('a select stops as soon as the budget runs out, with the budget error (not its own limit)', () => {
    const b = new RequestBudget({ steps: 5_000, ms: 1e9 });
    expect(() => compileJsonPath('$..*').select(object, b)).toThrow(BudgetExhaustedError);
    expect(b.stepsLeft).toBe(0);
  });

  test("the select's own limit still applies with a large budget", () => {
    const b = new RequestBudget({ steps: 1e12, ms: 1e9 });
    expect(MAX_VISITS).toBe(1_000_000);
    const deep = { a: Array.from({ length: 1_100 }, () => Array.from({ length: 1_000 }, () => 0)) };
    expect(() => compileJsonPath('$..*').select(deep, b)).toThrow(JsonPathLimitError);
  });

  test('static paths cost one step each', () => {
    const b = new RequestBudget({ steps: 100, ms: 1e9 });
    const kind = compileJsonPath('$.kind');
    for (let i = 0; i < 100; i++) kind.select({ kind: 'Pod' }, b);
    expect(() => kind.select({ kind: 'Pod' }, b)).toThrow(BudgetExhaustedError);
  });
});

describe('templates charge the request budget', () => {
  const t = compileTemplate('{{ range until 100000 }}{{ end }}done');

  test('a render without a budget is bounded only by its own limits', () => {
    expect(t.render({})).toBe('done');
  });

  test('a render stops once the budget runs out, with the budget error, not a template error', () => {
    const b = new RequestBudget({ steps: 10_000, ms: 1e9 });
    let err: unknown;
    try {
      t.render({}, b);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BudgetExhaustedError);
    expect(err).not.toBeInstanceOf(TemplateRuntimeError);
  });

  test('steps are charged for successful renders too, summed over renders', () => {
    const b = new RequestBudget({ steps: 450_000, ms: 1e9 });
    // ~2 steps per iteration: two renders fit, the third does not.
    expect(t.render({}, b)).toBe('done');
    expect(t.render({}, b)).toBe('done');
    expect(() => t.render({}, b)).toThrow(BudgetExhaustedError);
  });

  test('the budget error passes through function calls', () => {
    const b = new RequestBudget({ steps: 1_000, ms: 1e9 });
    const re = compileTemplate('{{ regexReplaceAll "a" (repeat 2000 "ab") "c" | len }}');
    expect(() => re.render({}, b)).toThrow(BudgetExhaustedError);
    expect(re.render({})).toBe('4000');
  });

  test('a regex replacement is charged per match: large ones stop at the step limit, smaller ones finish', () => {
    // 200,000 matches took 64 s when node-re2 called back per match; now linear, and 16 steps a match.
    const big = compileTemplate('{{ regexReplaceAll "a" (repeat 200000 "ab") "c" | len }}');
    expect(() => big.render({})).toThrow(/exceeded 1000000 steps at <regexReplaceAll/);
    const b = new RequestBudget({ steps: 1e9, ms: 1e9 });
    expect(compileTemplate('{{ regexReplaceAll "a" (repeat 20000 "ab") "c" | len }}').render({}, b)).toBe(
      '40000',
    );
    expect(1e9 - b.stepsLeft).toBeGreaterThanOrEqual(20_000 * 16);
  });
});
