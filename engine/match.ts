import { JsonValue } from '../json/value';
import { BudgetExhaustedError, RequestBudget } from '../limits/budget';
import { CompiledMatchItem, CompiledRule } from '../modrule/compile';
import { formatGoValue as goString } from '../jsonpath';

/**
 * True when every criteria item of the rule matches the object (KubeMod: all items must match). Selects charge the
 * request budget when one is given (BudgetExhaustedError when it runs out).
 */
export function ruleMatches(rule: CompiledRule, root: JsonValue, budget?: RequestBudget): boolean {
  for (const item of rule.match) if (!itemMatches(item, root, budget)) return false;
  return true;
}

/** Evaluates one criteria item as KubeMod's isMatch does. */
export function itemMatches(item: CompiledMatchItem, root: JsonValue, budget?: RequestBudget): boolean {
  let results;
  try {
    results = item.select.select(root, budget);
  } catch (err) {
    // The request's budget running out is not this select's failure.
    if (err instanceof BudgetExhaustedError) throw err;
    // KubeMod treats a select that fails at run time as "no result": only a negated item matches.
    return item.negate;
  }
  if (results.length === 0) return item.negate;

  let values: readonly JsonValue[];
  if (results.length === 1 && results[0].indices.length === 0) {
    // A definite path (no wildcard or filter) yields the value itself, as gval does in KubeMod.
    const v = results[0].value;
    if (typeof v === 'boolean') return v !== item.negate;
    if (v === null) return item.negate;
    // A definite path to a list is matched element by element (KubeMod receives a []interface{}).
    values = Array.isArray(v) ? v : [v];
  } else {
    values = results.map((r) => r.value);
  }
  if (values.length === 0) return item.negate;

  if (item.matchFor === 'All') {
    for (const v of values) if (!valueMatches(item, goString(v))) return item.negate;
    return !item.negate;
  }
  for (const v of values) if (valueMatches(item, goString(v))) return !item.negate;
  return item.negate;
}

// Precedence as in KubeMod: matchValue, then a non-empty matchValues, then matchRegex, else any value matches.
function valueMatches(item: CompiledMatchItem, value: string): boolean {
  if (item.matchValue !== undefined) return value === item.matchValue;
  if (item.matchValues !== undefined) return item.matchValues.includes(value);
  if (item.matchRegex !== undefined) return item.matchRegex.test(value);
  return true;
}
