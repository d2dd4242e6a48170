import { JsonObject, JsonValue } from '../util/json';
import { and } from './cel';
import {
  ABSENT,
  celListAt,
  celOptional,
  celShape,
  FieldPath,
  Found,
  rootValue,
  shapeHolds,
  walk,
} from './path';

/*
 * A guard is a condition under which the CEL the compiler writes is known to give what the engine gives: a value
 * has a type the CEL handles exactly, a container on a path has the expected shape, no last-applied annotation.
 * The native policy acts only when every guard holds; for the other objects the webhook keeps serving the rule
 * (residual.ts), so each guard is written twice: as CEL and as the same test on the JSON the engine sees.
 */

/**
 * How a guard's CEL cost grows with the object, which the dragnet's match conditions must bound (they share a cost
 * budget per request, and running out of it skips the webhook): `fixed` (the length of its text), `elements` (its
 * text for every element of a list of at most MAX_LIST elements), `text` (strings of at most MAX_PRINTED
 * characters built and matched), `elements-text` (both).
 */
export type GuardCost = 'fixed' | 'elements' | 'text' | 'elements-text';

/** Longest list a policy iterates (CEL's runtime cost grows with it; longer lists go to the webhook). */
export const MAX_LIST = 5000;
/** Longest value a template prints in a patch value the policy renders (longer ones go to the webhook). */
export const MAX_PRINTED = 1024;

/** One guard: CEL and the same test on the object the engine sees (with syntheticRefs). */
export interface Guard {
  readonly cel: string;
  holds(object: JsonObject): boolean;
  /** What it checks, for explanations. */
  readonly what: string;
  readonly cost: GuardCost;
}

/** The cost class of a guard that iterates (elements) on top of one of class `cost`. */
export function perElement(cost: GuardCost): GuardCost {
  return cost === 'text' || cost === 'elements-text' ? 'elements-text' : 'elements';
}

/** Guards collected while compiling one rule (deduplicated by CEL text). */
export class Guards {
  private readonly byCel = new Map<string, Guard>();

  add(guard: Guard): void {
    if (guard.cel === 'true') return;
    if (!this.byCel.has(guard.cel)) this.byCel.set(guard.cel, guard);
  }

  get list(): readonly Guard[] {
    return [...this.byCel.values()];
  }

  /** All guards as one CEL condition. */
  cel(): string {
    return and(this.list.map((g) => g.cel));
  }

  /** Whether every guard holds for the object. */
  holds(object: JsonObject): boolean {
    for (const g of this.byCel.values()) if (!g.holds(object)) return false;
    return true;
  }
}

/** Containers on the path are absent or of the right kind (path from the object or a namespace, not an element). */
export function shapeGuard(path: FieldPath, what: string): Guard {
  return {
    cel: celShape(path),
    holds: (object) => shapeHolds(path, rootValue(path.root, object)),
    what,
    cost: 'fixed',
  };
}

/**
 * For every element of a list (absent: none), a condition on the element: `celOf(e)` with the element in CEL
 * variable `e`, `test(element)` in TypeScript. The list itself must be absent or a list (the shape guard of its
 * path is added separately).
 */
export function everyElementGuard(
  list: FieldPath,
  variable: string,
  celOf: string,
  test: (element: JsonValue) => boolean,
  what: string,
  cost: GuardCost = 'fixed',
): Guard {
  return {
    cel: `${celListAt(list)}.all(${variable}, ${celOf})`,
    holds: (object) => {
      const v = walkFrom(list, object);
      if (v === ABSENT) return true;
      return Array.isArray(v) ? v.every(test) : true;
    },
    what,
    cost: perElement(cost),
  };
}

/** A condition on the value at a path (absent: `absentOk`). */
export function valueGuard(
  path: FieldPath,
  celOf: (value: string) => string,
  test: (value: JsonValue) => boolean,
  what: string,
  absentOk = true,
  cost: GuardCost = 'fixed',
): Guard {
  const opt = celOptional(path);
  const present = celOf(`dyn(${opt}.value())`);
  return {
    cel: absentOk ? `!${opt}.hasValue() || (${present})` : `${opt}.hasValue() && (${present})`,
    holds: (object) => {
      const v = walkFrom(path, object);
      return v === ABSENT ? absentOk : test(v);
    },
    what,
    cost,
  };
}

/**
 * A condition on the value at a path. A path from a list element (root `element`) must hold for every element of
 * `list` (the one list a select iterates): elements the select skips are checked too, which only sends more objects
 * to the webhook.
 */
export function pathGuard(
  path: FieldPath,
  list: FieldPath | undefined,
  celOf: (value: string) => string,
  test: (value: JsonValue) => boolean,
  what: string,
  absentOk = true,
  cost: GuardCost = 'fixed',
): Guard {
  if (path.root.kind !== 'element') return valueGuard(path, celOf, test, what, absentOk, cost);
  if (!list) throw new Error('internal: an element path without its list');
  const opt = celOptional(path);
  const present = celOf(`dyn(${opt}.value())`);
  return everyElementGuard(
    list,
    path.root.variable,
    absentOk ? `!${opt}.hasValue() || (${present})` : `${opt}.hasValue() && (${present})`,
    (el) => {
      const v = walk(el, path.tokens);
      return v === ABSENT ? absentOk : test(v);
    },
    what,
    cost,
  );
}

function walkFrom(path: FieldPath, object: JsonObject): Found {
  const base = rootValue(path.root, object);
  return base === ABSENT ? ABSENT : walk(base, path.tokens);
}

/** The object does not carry kubectl's last-applied-configuration (the webhook keeps that annotation in step). */
export function noLastAppliedGuard(annotation: string): Guard {
  const path: FieldPath = { root: { kind: 'object' }, tokens: ['metadata', 'annotations', annotation] };
  return {
    cel: `!${celOptional(path)}.hasValue()`,
    holds: (object) => walk(object, path.tokens) === ABSENT,
    what: `no ${annotation} annotation`,
    cost: 'fixed',
  };
}

/**
 * CEL: the value is a string, a boolean or an integer that Go's %v and CEL's string() print alike (below 1e6: Go
 * prints larger float64s with an exponent). Integers may reach CEL as int or as an integral double. (Unstructured
 * ints have no int() conversion in the API server: int(x) is only ever applied to doubles.)
 */
export function celPrintable(v: string): string {
  return (
    `type(${v}) == string || type(${v}) == bool || ` +
    `(type(${v}) == int && ${v} > -1000000 && ${v} < 1000000) || ` +
    `(type(${v}) == double && ${v} > -1000000.0 && ${v} < 1000000.0 && double(int(${v})) == ${v})`
  );
}

/** What celPrintable checks, on the JSON side. */
export function isPrintable(v: JsonValue): boolean {
  return (
    typeof v === 'string' ||
    typeof v === 'boolean' ||
    (typeof v === 'number' && Number.isInteger(v) && v > -1_000_000 && v < 1_000_000)
  );
}

/**
 * CEL: a printable value, or a list of at most MAX_LIST printable values (the bound keeps the cost of checking it
 * in step with the list guards).
 */
export function celPrintableOrList(v: string): string {
  return `(type(${v}) == list && size(${v}) <= ${MAX_LIST} && ${v}.all(y, ${celPrintable('y')}))`;
}

/** What celPrintableOrList's list half checks, on the JSON side. */
export function isPrintableList(v: JsonValue): boolean {
  return Array.isArray(v) && v.length <= MAX_LIST && v.every(isPrintable);
}

/** CEL: a printable value (celPrintable) as Go's %v prints it. */
export function celPrint(v: string): string {
  return (
    `(type(${v}) == string ? ${v} : (type(${v}) == bool || type(${v}) == int ? string(${v}) : ` +
    `string(int(${v}))))`
  );
}
