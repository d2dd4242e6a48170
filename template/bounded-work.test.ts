import { BudgetExhaustedError, RequestBudget } from '../util/budget';
import { compileTemplate } from '.';

// Work a function does on a large value is paid for as it goes, or before it starts when it cannot be stopped
// half-way (the yaml library, JSON.parse): a render over a large object is stopped by the request budget within
// bounded work.

// 10 + 100 + 1,000 + 10,000 nodes.
function tree(depth = 4): Record<string, unknown> | string {
  if (depth === 0) return 'leaf';
  return Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`n${i}`, tree(depth - 1)]));
}
const big = { spec: tree() };
const wide = { data: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, `v${i}`])) };

const spent = (b: RequestBudget) => 1e12 - b.stepsLeft;
const render = (source: string, data: Record<string, unknown>) => {
  const b = new RequestBudget({ steps: 1e12, ms: Infinity });
  const out = compileTemplate(source).render(data, b);
  return { out, steps: spent(b) };
};
const stopped = (source: string, data: Record<string, unknown>, steps: number) => () =>
  compileTemplate(source).render(data, new RequestBudget({ steps, ms: Infinity }));

describe('formatting a value is paid for as it goes', () => {
  test.each([
    ['printing it', '{{ .Target }}'],
    ['printf %v', '{{ printf "%v" .Target | len }}'],
    ['toString', '{{ toString .Target | len }}'],
  ])('%s: a step per node at least, and a small budget stops it', (_name, source) => {
    expect(render(source, { Target: big }).steps).toBeGreaterThan(11_110);
    expect(stopped(source, { Target: big }, 5_000)).toThrow(BudgetExhaustedError);
  });

  test('sorting a large map (range, keys, toJson) is paid for before it starts', () => {
    const { out, steps } = render('{{ range $k, $v := .Target.data }}{{ end }}done', { Target: wide });
    expect(out).toBe('done');
    expect(steps).toBeGreaterThan(2 * 20_000);
    expect(stopped('{{ keys .Target.data | len }}', { Target: wide }, 30_000)).toThrow(BudgetExhaustedError);
  });
});

describe('work that cannot be stopped half-way is paid for before it starts', () => {
  test('toYaml: ~40 steps a node, before the yaml library runs', () => {
    const { steps } = render('{{ toYaml .Target | len }}', { Target: big });
    expect(steps).toBeGreaterThan(40 * 11_110);
    // Enough to walk the value (a step a node), not to write it.
    expect(stopped('{{ toYaml .Target | len }}', { Target: big }, 50_000)).toThrow(BudgetExhaustedError);
  });

  test('fromYaml: steps in proportion to the text, before it is parsed', () => {
    const text = 'a: b\n'.repeat(20_000);
    expect(render('{{ fromYaml .Text | len }}', { Text: text }).steps).toBeGreaterThan(4 * text.length);
  });

  test('fromJson: a step per 16 characters before parsing, then per node rebuilt', () => {
    const text = JSON.stringify(big);
    const { out, steps } = render('{{ fromJson .Text | len }}', { Text: text });
    expect(out).toBe('1');
    expect(steps).toBeGreaterThan(text.length / 16 + 11_110);
  });
});
