import { holdBudgetMs, parseGoDuration, within } from './hold';

describe('holdBudgetMs', () => {
  it("reads the API server's ?timeout= and keeps a second in hand", () => {
    expect(holdBudgetMs('/dragnet-webhook?timeout=10s')).toBe(9000);
    expect(holdBudgetMs('/dragnet-webhook?timeout=30s')).toBe(29_000);
    expect(holdBudgetMs('/dragnet-webhook?timeout=1s')).toBe(0);
  });

  it('assumes the default 10 s when the call carries no usable timeout', () => {
    expect(holdBudgetMs('/dragnet-webhook')).toBe(9000);
    expect(holdBudgetMs('/dragnet-webhook?timeout=soon')).toBe(9000);
    expect(holdBudgetMs(undefined)).toBe(9000);
  });
});

describe('parseGoDuration', () => {
  it.each([
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['1h', 3_600_000],
  ])('%s is %d ms', (text, ms) => expect(parseGoDuration(text)).toBe(ms));

  it.each(['', '10', 's', '10s junk', '-1s'])('refuses %j', (text) =>
    expect(parseGoDuration(text)).toBeNull(),
  );
});

describe('within', () => {
  it('is true when the promise settles in time and false when it does not', async () => {
    await expect(within(Promise.resolve(), 50)).resolves.toBe(true);
    await expect(within(new Promise(() => undefined), 20)).resolves.toBe(false);
    await expect(within(Promise.reject(new Error('x')), 50)).resolves.toBe(false);
  });
});
