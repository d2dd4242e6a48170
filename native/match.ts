import { JsonValue } from '../util/json';
import type { CompiledMatchItem } from '../rule/compile';
import { and, celRegex, not, or } from './cel';
import {
  celPrint,
  celPrintable,
  celPrintableOrList,
  everyElementGuard,
  isPrintable,
  isPrintableList,
  valueGuard,
} from './guard';
import { ABSENT, celListAt, celOptional, celValueOrNull, walk } from './path';
import { compileSelection, Selection } from './select';
import { ELEMENT, SelectContext } from './select-context';
import { celGoTextEquals } from './values';

/*
 * One criteria item as a CEL boolean, following the engine's itemMatches: no result matches only when negated; a
 * definite path to a boolean is the verdict itself; null counts as no result; a definite path to a list is matched
 * element by element; then matchFor Any/All over the values with matchValue, matchValues or matchRegex.
 */

/** The item's CEL; guards and reads go to ctx. Throws NoCelForm. */
export function compileMatchItem(item: CompiledMatchItem, ctx: SelectContext): string {
  const selection = compileSelection(item.select.ast, ctx);
  const negate = item.negate;
  if (selection.kind === 'boolean') return negate ? not(selection.isTrue) : selection.isTrue;
  const compare = comparison(item);
  if (selection.kind === 'definite') return definiteItem(selection, item, compare, ctx);
  return iteratedItem(selection, item, compare, ctx);
}

/** CEL of "the printed value x satisfies the item" for a value in variable `x`. */
type Comparison = { cel: (x: string) => string; regex: boolean };

function comparison(item: CompiledMatchItem): Comparison {
  if (item.matchValue !== undefined) {
    const m = item.matchValue;
    return { cel: (x) => celGoTextEquals(x, m), regex: false };
  }
  if (item.matchValues !== undefined) {
    const ms = item.matchValues;
    return { cel: (x) => or(ms.map((m) => celGoTextEquals(x, m))), regex: false };
  }
  if (item.matchRegex !== undefined) {
    const re = celRegex(item.matchRegex.source);
    return { cel: (x) => `${celPrint(x)}.matches(${re})`, regex: true };
  }
  return { cel: () => 'true', regex: false };
}

/** matchFor over the values in CEL list expression `values` (non-empty), XOR negate. */
function quantified(values: string, item: CompiledMatchItem, compare: Comparison): string {
  const q = item.matchFor === 'All' ? 'all' : 'exists';
  const body = compare.cel('x');
  const test = body === 'true' ? 'true' : `${values}.${q}(x, ${body})`;
  return item.negate ? not(test) : test;
}

function definiteItem(
  selection: Extract<Selection, { kind: 'definite' }>,
  item: CompiledMatchItem,
  compare: Comparison,
  ctx: SelectContext,
): string {
  const neg = item.negate ? 'true' : 'false';
  const v = celValueOrNull(selection.path);
  if (compare.regex) {
    ctx.guards.add(
      valueGuard(
        selection.path,
        (x) => or([`${x} == null`, `type(${x}) == bool`, celPrintableOrList(x), celPrintable(x)]),
        (x) =>
          x === null ||
          typeof x === 'boolean' ||
          (Array.isArray(x) ? isPrintableList(x) : isPrintable(x as JsonValue)),
        'values tested with matchRegex print alike in Go and CEL',
        true,
        'elements',
      ),
    );
  }
  const bool = item.negate ? '!v' : 'v';
  // A list's elements are the values; anything else is one value. An empty list matches only when negated.
  const list = `(size(v) == 0 ? ${neg} : ${quantified('v', item, compare)})`;
  const one = quantified('[v]', item, compare);
  // Bound once: [value].all(v, ...) evaluates the path a single time.
  return `[${v}].all(v, v == null ? ${neg} : (type(v) == bool ? ${bool} : (type(v) == list ? ${list} : ${one})))`;
}

function iteratedItem(
  selection: Extract<Selection, { kind: 'iterated' }>,
  item: CompiledMatchItem,
  compare: Comparison,
  ctx: SelectContext,
): string {
  const neg = item.negate ? 'true' : 'false';
  const list = celListAt(selection.list);
  const suffix = celOptional({ root: { kind: 'element', variable: ELEMENT }, tokens: selection.suffix });
  if (compare.regex) {
    ctx.guards.add(
      everyElementGuard(
        selection.list,
        ELEMENT,
        or([`!${suffix}.hasValue()`, celPrintable(`dyn(${suffix}.value())`)]),
        (el) => {
          const v = walk(el, selection.suffix);
          return v === ABSENT || isPrintable(v);
        },
        'values tested with matchRegex print alike in Go and CEL',
      ),
    );
  }
  const keep = and([selection.filter, `${suffix}.hasValue()`]);
  const values = `${list}.transformList(i, ${ELEMENT}, ${keep}, dyn(${suffix}.value()))`;
  // Bound once: [values].all(r, ...) evaluates the comprehension a single time.
  return `[${values}].all(r, size(r) == 0 ? ${neg} : ${quantified('r', item, compare)})`;
}
