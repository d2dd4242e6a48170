import { BudgetExhaustedError, RequestBudget } from '../util/budget';
import { JsonValue } from '../util/json';
import { compileModRule } from '../rule/compile';
import { ModRule } from '../rule/types';
import { itemMatches } from './match';
import { applyOperations } from './patch';

// The engine's own work on large values is paid for as it goes: comparing a map or list as text (it is formatted
// first) and moving the elements of a long array.

const item = (match: Record<string, unknown>) =>
  compileModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'm', namespace: 'default' },
    spec: { type: 'Reject', match: [match] },
  } as unknown as ModRule).match[0];

const data = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, `v${i}`]));

describe('comparing a map as text', () => {
  test('pays for formatting it as it goes: a small budget stops it', () => {
    const regex = item({ select: '$.data', matchRegex: 'never-there' });
    expect(() => itemMatches(regex, { data }, new RequestBudget({ steps: 10_000, ms: Infinity }))).toThrow(
      BudgetExhaustedError,
    );
    const b = new RequestBudget({ steps: 1e12, ms: Infinity });
    expect(itemMatches(regex, { data }, b)).toBe(false);
    expect(1e12 - b.stepsLeft).toBeGreaterThan(2 * 20_000);
  });
});

describe('operations on a long array', () => {
  test('pay a step per 64 elements they move', () => {
    const items: JsonValue = { items: Array.from({ length: 10_000 }, (_, i) => i) };
    const b = new RequestBudget({ steps: 1e12, ms: Infinity });
    const ops = Array.from({ length: 500 }, () => ({ op: 'remove' as const, tokens: ['items', '0'] }));
    const out = applyOperations(items, ops, b) as { items: number[] };
    expect(out.items).toHaveLength(9_500);
    expect(1e12 - b.stepsLeft).toBeGreaterThan(500 * (9_500 >> 6));
    // Replacing in place moves nothing: a step each.
    const r = new RequestBudget({ steps: 1e12, ms: Infinity });
    applyOperations(items, [{ op: 'replace', tokens: ['items', '5'], value: 1 }], r);
    expect(1e12 - r.stepsLeft).toBe(1);
  });
});
