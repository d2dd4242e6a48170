import { BudgetExhaustedError, RequestBudget } from '../util/budget';
import { JsonObject } from '../util/json';
import { compileJsonPath, formatGoValue } from '.';
import { RESULT_STEPS } from './evaluate';

// Work a select does beyond visiting nodes is charged as it is done, so the request budget stops a heavy select
// within bounded work, not after it has built every result (or formatted a whole object).

// A chain `depth` levels deep, with `leaves` leaves on each level.
function chain(depth: number, leaves: number): JsonObject {
  let o: JsonObject = { end: 'x' };
  for (let i = 0; i < depth; i++) {
    o = { next: o };
    for (let j = 0; j < leaves; j++) o[`l${j}`] = `v${i}-${j}`;
  }
  return o;
}

const spent = (b: RequestBudget) => 1e12 - b.stepsLeft;
const budget = () => new RequestBudget({ steps: 1e12, ms: Infinity });

describe('select results are charged as they are built', () => {
  test('each result costs RESULT_STEPS beyond its visit', () => {
    const items = { items: Array.from({ length: 5_000 }, (_, i) => i) };
    const b = budget();
    expect(compileJsonPath('$.items[*]').select(items, b)).toHaveLength(5_000);
    expect(spent(b)).toBeGreaterThanOrEqual(5_000 * (1 + RESULT_STEPS));
  });

  test("a result's pointer costs its depth: a descent into a deep object pays for every level", () => {
    const flat = budget();
    compileJsonPath('$..*').select(
      Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, 'v'])),
      flat,
    );
    const deep = budget();
    compileJsonPath('$..*').select(chain(400, 0), deep);
    // 400 results one level down against 400 results with pointers up to 400 levels long.
    expect(spent(flat)).toBeLessThan(400 * (2 + RESULT_STEPS) + 10);
    expect(spent(deep)).toBeGreaterThan(10 * spent(flat));
  });

  test('a budget stops a deep descent within bounded work', () => {
    const b = new RequestBudget({ steps: 20_000, ms: Infinity });
    // 5,300 results whose pointers average 1,200 characters: far more than 20,000 steps of work.
    expect(() => compileJsonPath('$..*').select(chain(480, 10), b)).toThrow(BudgetExhaustedError);
  });
});

describe('formatting a value for a comparison', () => {
  const big = { data: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, `v${i}`])) };

  test('charges a step per element and key as it goes, and stops when the charge throws', () => {
    let charged = 0;
    const text = formatGoValue(big, (n) => (charged += n));
    expect(text.startsWith('map[data:map[k0:v0 k1:v1 k10:v10')).toBe(true);
    expect(charged).toBeGreaterThanOrEqual(2 * 20_000);

    let calls = 0;
    expect(() =>
      formatGoValue({ a: big, b: big }, () => {
        if (++calls > 2) throw new BudgetExhaustedError('stop');
      }),
    ).toThrow('stop');
    expect(calls).toBe(3);
  });

  test('formats as before when nothing is charged', () => {
    expect(formatGoValue({ b: [1, 'x', null], a: { c: true } })).toBe('map[a:map[c:true] b:[1 x <nil>]]');
  });

  test('a filter comparing maps as text pays for formatting them', () => {
    const b = budget();
    const object = { items: Array.from({ length: 100 }, () => big.data) };
    expect(() =>
      compileJsonPath('$.items[? @ =~ "zzz"]').select(
        object,
        new RequestBudget({ steps: 50_000, ms: Infinity }),
      ),
    ).toThrow(BudgetExhaustedError);
    compileJsonPath('$.items[? @ =~ "zzz"]').select({ items: [big.data] }, b);
    expect(spent(b)).toBeGreaterThan(2 * 20_000);
  });
});
