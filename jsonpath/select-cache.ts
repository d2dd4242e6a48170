import { JsonValue } from '../util/json';
import { BudgetExhaustedError, RequestBudget } from '../util/budget';
import { SafeRegex } from '../util/regex';
import type { CompiledJsonPath } from './index';
import type { SelectResult } from './evaluate';

/**
 * Select results for one version of an object: rules repeat the same selects (`$.kind`, the images), and
 * interned selects are the same object, so each distinct select runs at most once per object version.
 */
export class SelectCache {
  private readonly results = new Map<CompiledJsonPath, SelectResult[] | Error>();
  // Interned regexes are shared too: the rules of a namespace test the same images with the same few patterns.
  private readonly tests = new Map<SafeRegex, Map<string, boolean>>();
  // Verdicts of interned criteria items (the same text in many rules), keyed by the item.
  private readonly verdicts = new Map<object, boolean>();

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

  /** The verdict remembered for `key` in this object version (undefined: not decided yet). */
  verdict(key: object): boolean | undefined {
    return this.verdicts.get(key);
  }

  /** Remembers the verdict for `key` (a criteria item) in this object version. */
  remember(key: object, verdict: boolean): boolean {
    this.verdicts.set(key, verdict);
    return verdict;
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
