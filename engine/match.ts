import { JsonValue } from '../json/value';
import { BudgetExhaustedError, RequestBudget } from '../limits/budget';
import { CompiledMatchItem, CompiledRule } from '../modrule/compile';
import { CompiledJsonPath, formatGoValue as goString, SelectResult } from '../jsonpath';
import { SafeRegex } from '../regex/compile';

/**
 * Select results for one version of an object: rules repeat the same selects (`$.kind`, the images), and
 * interned selects are the same object, so each distinct select runs at most once per object version.
 */
export class SelectCache {
  private readonly results = new Map<CompiledJsonPath, SelectResult[] | Error>();
  // Interned regexes are shared too: the rules of a namespace test the same images with the same few patterns.
  private readonly tests = new Map<SafeRegex, Map<string, boolean>>();
  private readonly items = new Map<CompiledMatchItem, boolean>();

  /** `budget`: the request's, charged by the selects (BudgetExhaustedError when it runs out). */
  constructor(
    readonly root: JsonValue,
    readonly budget?: RequestBudget,
  ) {}

  /** The select's results against root, or the error it threw (both remembered). */
  select(select: CompiledJsonPath): SelectResult[] | Error {
    let r = this.results.get(select);
    if (r === undefined) {
      try {
        r = select.select(this.root, this.budget);
      } catch (err) {
        // The request's budget running out is not this select's failure: never remembered as its result.
        if (err instanceof BudgetExhaustedError) throw err;
        r = err instanceof Error ? err : new Error(String(err));
      }
      this.results.set(select, r);
    }
    return r;
  }

  /** Whether the criteria item matches root; interned items (the same text in many rules) are matched once. */
  matches(item: CompiledMatchItem): boolean {
    let r = this.items.get(item);
    if (r === undefined) this.items.set(item, (r = itemMatchesIn(item, this)));
    return r;
  }

  /** regex.test(value), remembered per regex and value (in this object version, and across requests). */
  test(regex: SafeRegex, value: string): boolean {
    let byValue = this.tests.get(regex);
    if (!byValue) this.tests.set(regex, (byValue = new Map()));
    let r = byValue.get(value);
    if (r === undefined) byValue.set(value, (r = testRemembered(regex, value)));
    return r;
  }
}

// Images, names and kinds repeat from request to request: a small bounded memory per (interned) regex saves the
// call into RE2. Bounded in entries and in value length, so no request can grow it.
const REMEMBERED_PER_REGEX = 256;
const MAX_REMEMBERED_LENGTH = 256;
const remembered = new WeakMap<SafeRegex, Map<string, boolean>>();

function testRemembered(regex: SafeRegex, value: string): boolean {
  if (value.length > MAX_REMEMBERED_LENGTH) return regex.test(value);
  let memo = remembered.get(regex);
  if (!memo) remembered.set(regex, (memo = new Map()));
  let r = memo.get(value);
  if (r === undefined) {
    r = regex.test(value);
    if (memo.size >= REMEMBERED_PER_REGEX) memo.clear();
    memo.set(value, r);
  }
  return r;
}

/**
 * True when every criteria item of the rule matches the object (KubeMod: all items must match). `cache` holds the
 * object's selects (and the request budget they charge); without one, a fresh uncharged cache.
 */
export function ruleMatches(rule: CompiledRule, root: JsonValue, cache?: SelectCache): boolean {
  const selects = cache && cache.root === root ? cache : new SelectCache(root);
  for (const item of rule.match) if (!selects.matches(item)) return false;
  return true;
}

/** Evaluates one criteria item as KubeMod's isMatch does. */
export function itemMatches(item: CompiledMatchItem, root: JsonValue, budget?: RequestBudget): boolean {
  return itemMatchesIn(item, new SelectCache(root, budget));
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

  if (item.matchFor === 'All') {
    for (const v of values) if (!valueMatches(item, goString(v), selects)) return item.negate;
    return !item.negate;
  }
  for (const v of values) if (valueMatches(item, goString(v), selects)) return !item.negate;
  return item.negate;
}

/**
 * Whether one stringified select result satisfies the item's comparison. Precedence as in KubeMod: matchValue, then
 * a non-empty matchValues, then matchRegex, else any value matches. `selects` remembers regex results.
 */
export function valueMatches(item: CompiledMatchItem, value: string, selects?: SelectCache): boolean {
  if (item.matchValue !== undefined) return value === item.matchValue;
  if (item.matchValues !== undefined) return item.matchValues.includes(value);
  if (item.matchRegex !== undefined)
    return selects ? selects.test(item.matchRegex, value) : item.matchRegex.test(value);
  return true;
}
