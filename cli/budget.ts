import { BudgetLimits, DEFAULT_BUDGET } from '../util/budget';
import { UsageError } from './io';

/**
 * Help text lines for the budget flags (`serve` and `operator`), descriptions from `column` on (the help's own
 * column); `env` adds the environment variable names.
 */
export function budgetHelp(env: boolean, column: number): string {
  const e = (name: string) => (env ? ` [${name}]` : '');
  // A flag too long for the column goes on a line of its own.
  const option = (spec: string) =>
    `  ${spec}`.length + 2 > column ? `  ${spec}\n${' '.repeat(column)}` : `  ${spec}`.padEnd(column);
  const more = ' '.repeat(column);
  return (
    `${option('--request-budget-ms N')}time one dragnet request may spend evaluating, all rules together${e('MODRULE_REQUEST_BUDGET_MS')}\n` +
    `${more}(default ${DEFAULT_BUDGET.ms}); then the remaining rules fail with a warning\n` +
    `${option('--request-budget-steps N')}evaluation steps one dragnet request may spend${e('MODRULE_REQUEST_BUDGET_STEPS')}\n` +
    `${more}(default ${DEFAULT_BUDGET.steps})\n`
  );
}

function positive(value: string, where: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || !Number.isSafeInteger(n))
    throw new UsageError(`${where} must be a positive integer, got "${value}"`);
  return n;
}

/** The request budget from flag (or environment) values; undefined values keep the defaults. */
export function parseBudget(
  ms: { value: string | undefined; where: string },
  steps: { value: string | undefined; where: string },
): BudgetLimits {
  return {
    ms: ms.value === undefined ? DEFAULT_BUDGET.ms : positive(ms.value, ms.where),
    steps: steps.value === undefined ? DEFAULT_BUDGET.steps : positive(steps.value, steps.where),
  };
}
