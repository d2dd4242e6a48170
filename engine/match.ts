import { JsonValue } from '../util/json';
import { RequestBudget } from '../util/budget';
import { CompiledMatchItem, CompiledRule } from '../rule/compile';
import { formatGoValue as goString } from '../jsonpath';
import { SelectCache } from '../jsonpath/select-cache';

/**
 * True when every criteria item of the rule matches the object (KubeMod: all items must match). `cache` holds the
 * object's selects (and the request budget they charge); without one, a fresh uncharged cache.
 */
export function ruleMatches(rule: CompiledRule, root: JsonValue, cache?: SelectCache): boolean {
  const selects = cache && cache.root === root ? cache : new SelectCache(root);
  for (const item of rule.match) if (!cachedItemMatches(item, selects)) return false;
  return true;
}

/** Evaluates one criteria item as KubeMod's isMatch does. */
export function itemMatches(item: CompiledMatchItem, root: JsonValue, budget?: RequestBudget): boolean {
  return itemMatchesIn(item, new SelectCache(root, budget));
}

/** Whether the criteria item matches the cache's object; interned items are matched once per object version. */
export function cachedItemMatches(item: CompiledMatchItem, selects: SelectCache): boolean {
  const known = selects.verdict(item);
  return known !== undefined ? known : selects.remember(item, itemMatchesIn(item, selects));
}

function itemMatchesIn(item: CompiledMatchItem, selects: SelectCache): boolean {
  const results = selects.select(item.select);
  // KubeMod treats a select that fails at run time as "no result": only a negated item matches.
  if (results instanceof Error) return item.negate;
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

  const perValue = compareSteps(item);
  if (item.matchFor === 'All') {
    for (const v of values)
      if (!valueMatches(item, compared(v, perValue, selects), selects)) return item.negate;
    return !item.negate;
  }
  for (const v of values)
    if (valueMatches(item, compared(v, perValue, selects), selects)) return !item.negate;
  return item.negate;
}

/** What one regex test costs in steps: a call into RE2 takes ~2-4 us, a step ~0.1-0.25 us. */
export const REGEX_STEPS = 16;
/** A lookup in a long matchValues list (a Set of up to 100,000s of strings: ~1 us, mostly cache misses). */
export const VALUES_LOOKUP_STEPS = 8;

// The steps one comparison costs, by what the item compares with (the precedence of valueMatches).
function compareSteps(item: CompiledMatchItem): number {
  if (item.matchValue !== undefined) return 1;
  if (item.matchValues !== undefined) return item.valueSet ? VALUES_LOOKUP_STEPS : 1;
  return item.matchRegex !== undefined ? REGEX_STEPS : 1;
}

// Comparing a value costs its steps, and one more per 64 characters: a rule comparing every value of a big object
// pays for it, not only for the select. A map or list is formatted as Go prints it, paid for as it goes.
function compared(v: JsonValue, steps: number, selects: SelectCache): string {
  const budget = selects.budget;
  const text =
    budget && typeof v === 'object' && v !== null ? goString(v, (n) => budget.charge(n)) : goString(v);
  budget?.charge(steps + (text.length >> 6));
  return text;
}

/**
 * Whether one stringified select result satisfies the item's comparison. Precedence as in KubeMod: matchValue, then
 * a non-empty matchValues, then matchRegex, else any value matches. `selects` remembers regex results.
 */
export function valueMatches(item: CompiledMatchItem, value: string, selects?: SelectCache): boolean {
  if (item.matchValue !== undefined) return value === item.matchValue;
  if (item.matchValues !== undefined)
    return item.valueSet ? item.valueSet.has(value) : item.matchValues.includes(value);
  if (item.matchRegex !== undefined)
    return selects ? selects.test(item.matchRegex, value) : item.matchRegex.test(value);
  return true;
}
