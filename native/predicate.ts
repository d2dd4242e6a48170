import { JsonValue } from '../util/json';
import type { JsonPathNode, PathNode } from '../jsonpath';
import { and, celNumber, celRegex, celString, not, or } from './cel';
import { IMAGE_FUNCTIONS, ImageFunctionName } from '../jsonpath/ast';
import { celImagePart, referenceGuard } from './image';
import { celPrint, celPrintable, isPrintable, pathGuard, shapeGuard } from './guard';
import { celOptional, celValueOrNull, FieldPath, Token } from './path';
import { definite, ELEMENT, elementShapeGuard, SelectContext, tokenOf } from './select-context';
import { celLength, celLengthDefined, celLooseEquals, NoCelForm } from './values';

// Boolean selects and filters as CEL predicates: comparisons with literals, =~ with a literal RE2 pattern, `in` a
// list of literals, length/isEmpty/isNotEmpty/isDefined/isUndefined, !, && and ||.

/** A filter keeps an element when its predicate is true, a number other than 0, or "true"/"TRUE" (gval's bool). */
export function truthy(o: Operand): string {
  if (o.kind !== 'path') throw new NoCelForm('internal: path operand');
  const v = celValueOrNull(o.path);
  return or([
    `${v} == true`,
    `((type(${v}) == int || type(${v}) == double) && ${v} != 0)`,
    `${v} == "true"`,
    `${v} == "TRUE"`,
  ]);
}

/** Inside a filter: the list whose elements `@` stands for. */
export interface ElementScope {
  readonly list: FieldPath;
  readonly reads: Token[][];
}

/** A predicate in three-valued logic: CEL for "is true" and for "is false" (an error is neither). */
export interface Pred {
  readonly t: string;
  readonly f: string;
}

type Operand =
  | { kind: 'path'; path: FieldPath; element: boolean }
  | { kind: 'literal'; value: JsonValue }
  | { kind: 'length'; path: FieldPath; element: boolean }
  | { kind: 'image'; fn: ImageFunctionName; path: FieldPath; element: boolean };

function operand(node: JsonPathNode, ctx: SelectContext, scope: ElementScope | null): Operand {
  if (node.kind === 'literal') return { kind: 'literal', value: node.value };
  if (node.kind === 'path') return pathOperand(node, ctx, scope);
  if (node.kind === 'call' && node.name === 'length') {
    const inner = operand(node.args[0], ctx, scope);
    if (inner.kind !== 'path') throw new NoCelForm('length() of something other than a path');
    return { kind: 'length', path: inner.path, element: inner.element };
  }
  if (node.kind === 'call' && IMAGE_FUNCTIONS.has(node.name)) {
    const inner = operand(node.args[0], ctx, scope);
    if (inner.kind !== 'path') throw new NoCelForm(`${node.name}() of something other than a path`);
    // The engine's value is undefined for anything but a reference: only well-formed ones stay with the policy.
    ctx.guards.add(referenceGuard(inner.path, scope?.list, true));
    return { kind: 'image', fn: node.name as ImageFunctionName, path: inner.path, element: inner.element };
  }
  throw new NoCelForm(`${node.kind === 'call' ? `${node.name}()` : node.kind} as an operand`);
}

/** A path inside an expression: from `$` (definite) or, in a filter, from `@`; guards added for its shape. */
export function pathOperand(node: PathNode, ctx: SelectContext, scope: ElementScope | null): Operand {
  if (node.segments.some((s) => s.type !== 'name' && s.type !== 'index')) {
    throw new NoCelForm('a wildcard or filter inside an expression');
  }
  if (node.root === '@') {
    if (!scope) throw new NoCelForm('@ outside a filter');
    const tokens = node.segments.map(tokenOf);
    scope.reads.push(tokens);
    const path: FieldPath = { root: { kind: 'element', variable: ELEMENT }, tokens };
    ctx.guards.add(elementShapeGuard(scope.list, tokens, 'each element has the shape the filter reads'));
    return { kind: 'path', path, element: true };
  }
  const path = definite(node, ctx);
  ctx.guards.add(shapeGuard(path, 'containers along the path'));
  return { kind: 'path', path, element: false };
}

/** Compiles a condition; `scope` is the filtered list inside a filter, null for a boolean select. */
export function predicate(node: JsonPathNode, ctx: SelectContext, scope: ElementScope | null): Pred {
  switch (node.kind) {
    case 'literal':
      if (typeof node.value === 'boolean') return constant(node.value);
      throw new NoCelForm('a non-boolean literal as a condition');
    case 'unary': {
      if (node.op !== '!') throw new NoCelForm('unary minus as a condition');
      const inner = predicate(node.operand, ctx, scope);
      return { t: inner.f, f: inner.t };
    }
    case 'call':
      return callPredicate(node.name, node.args[0], ctx, scope);
    case 'path': {
      // A bare path as a condition: only a boolean value is true or false (&&, || and ! take booleans only).
      const o = pathOperand(node, ctx, scope);
      if (o.kind !== 'path') throw new NoCelForm('internal: path operand');
      return { t: `${celValueOrNull(o.path)} == true`, f: `${celValueOrNull(o.path)} == false` };
    }
    case 'binary':
      return binaryPredicate(node.op, node.left, node.right, ctx, scope);
    default:
      throw new NoCelForm(`${node.kind} as a condition`);
  }
}

function constant(b: boolean): Pred {
  return b ? { t: 'true', f: 'false' } : { t: 'false', f: 'true' };
}

function callPredicate(
  name: string,
  arg: JsonPathNode,
  ctx: SelectContext,
  scope: ElementScope | null,
): Pred {
  const o = operand(arg, ctx, scope);
  const defined = name === 'isDefined' || name === 'isUndefined';
  if (o.kind !== 'path' && !(o.kind === 'image' && defined))
    throw new NoCelForm(`${name}() of something other than a path`);
  const opt = celOptional(o.path);
  switch (name) {
    case 'isDefined':
      return { t: `${opt}.hasValue()`, f: `!${opt}.hasValue()` };
    case 'isUndefined':
      return { t: `!${opt}.hasValue()`, f: `${opt}.hasValue()` };
    case 'isEmpty':
    case 'isNotEmpty': {
      const ok = celLengthDefined(opt);
      const zero = `${celLength(opt)} == 0`;
      const empty = { t: and([ok, zero]), f: and([ok, not(zero)]) };
      return name === 'isEmpty' ? empty : { t: empty.f, f: empty.t };
    }
    default:
      throw new NoCelForm(`${name}() as a condition`);
  }
}

function binaryPredicate(
  op: string,
  leftNode: JsonPathNode,
  rightNode: JsonPathNode,
  ctx: SelectContext,
  scope: ElementScope | null,
): Pred {
  if (op === '&&' || op === '||') {
    const a = predicate(leftNode, ctx, scope);
    const b = predicate(rightNode, ctx, scope);
    return op === '&&'
      ? { t: and([a.t, b.t]), f: or([a.f, and([a.t, b.f])]) }
      : { t: or([a.t, and([a.f, b.t])]), f: and([a.f, b.f]) };
  }
  const left = operand(leftNode, ctx, scope);
  const image = imagePredicate(op, left, rightNode, ctx, scope);
  if (image) return image;
  if (op === '=~' || op === '!~') return regexPredicate(op, left, rightNode, ctx, scope);
  const right = operand(rightNode, ctx, scope);
  if (op === '==' || op === '!=') {
    const [path, lit] = pathAndLiteral(left, right, op);
    const opt = celOptional(path.path);
    const eq = celLooseEquals(`dyn(${opt}.value())`, lit.value);
    if (eq.excludeStrings) notStringGuard(path, ctx, scope);
    // Undefined on either side is false for == and != alike.
    const t = and([`${opt}.hasValue()`, op === '==' ? eq.cel : not(eq.cel)]);
    return { t, f: not(t) };
  }
  if (op === 'in') {
    if (left.kind !== 'path' || right.kind !== 'literal' || !Array.isArray(right.value))
      throw new NoCelForm('in with something other than a path and a list of literals');
    const items = right.value;
    if (items.some((x) => x !== null && typeof x === 'object'))
      throw new NoCelForm('in with lists or maps in the list');
    const opt = celOptional(left.path);
    const t = and([`${opt}.hasValue()`, or(items.map((x) => `dyn(${opt}.value()) == ${literalCel(x)}`))]);
    return { t, f: not(t) };
  }
  if (op === '<' || op === '<=' || op === '>' || op === '>=') {
    if (right.kind !== 'literal' || typeof right.value !== 'number')
      throw new NoCelForm(`${op} with something other than a number literal on the right`);
    const n = celNumber(right.value);
    if (left.kind === 'length') {
      const opt = celOptional(left.path);
      const ok = celLengthDefined(opt);
      const cmp = `${celLength(opt)} ${op} ${n}`;
      return { t: and([ok, cmp]), f: and([ok, not(cmp)]) };
    }
    if (left.kind !== 'path') throw new NoCelForm(`${op} between literals`);
    numberGuard(left, ctx, scope);
    const opt = celOptional(left.path);
    const t = and([`${opt}.hasValue()`, `dyn(${opt}.value()) ${op} ${n}`]);
    return { t, f: not(t) };
  }
  throw new NoCelForm(`operator ${op}`);
}

/** `=~` and `!~` of a path with a literal pattern. */
function regexPredicate(
  op: '=~' | '!~',
  left: Operand,
  rightNode: JsonPathNode,
  ctx: SelectContext,
  scope: ElementScope | null,
): Pred {
  if (rightNode.kind !== 'literal' || typeof rightNode.value !== 'string')
    throw new NoCelForm('=~ with a pattern that is not a literal string');
  if (left.kind !== 'path') throw new NoCelForm('=~ on something other than a path');
  const opt = celOptional(left.path);
  printableGuard(left, ctx, scope);
  // An undefined left side is false for both =~ and !~.
  const test = `${celPrint(`dyn(${opt}.value())`)}.matches(${celRegex(rightNode.value)})`;
  const t = and([`${opt}.hasValue()`, op === '=~' ? test : not(test)]);
  return { t, f: not(t) };
}

/** A comparison of an image function's value with string literals (==, !=, in, =~, !~); undefined for others. */
function imagePredicate(
  op: string,
  left: Operand,
  rightNode: JsonPathNode,
  ctx: SelectContext,
  scope: ElementScope | null,
): Pred | undefined {
  const right = left.kind === 'image' ? operand(rightNode, ctx, scope) : undefined;
  if (left.kind !== 'image' || !right) {
    if (rightNode.kind === 'call' && IMAGE_FUNCTIONS.has(rightNode.name))
      throw new NoCelForm(`${rightNode.name}() on the right: write it on the left of the comparison`);
    return undefined;
  }
  const opt = celOptional(left.path);
  const part = celImagePart(left.fn, `string(${opt}.value())`);
  const strings =
    right.kind === 'literal' && Array.isArray(right.value)
      ? right.value
      : [right.kind === 'literal' ? right.value : null];
  if (strings.some((x) => typeof x !== 'string'))
    throw new NoCelForm(`${left.fn}() compared with something other than string literals`);
  const lits = strings as string[];
  // Undefined (no value) is false for every comparison, negative ones too.
  let test: string;
  if (op === '==' || op === '!=') test = `${part} ${op} ${celString(lits[0])}`;
  else if (op === 'in' && Array.isArray((right as { value: JsonValue }).value))
    test = or(lits.map((x) => `${part} == ${celString(x)}`));
  else if (op === '=~' || op === '!~')
    test = `${op === '!~' ? '!' : ''}${part}.matches(${celRegex(lits[0])})`;
  else throw new NoCelForm(`${left.fn}() with ${op}`);
  const t = and([`${opt}.hasValue()`, test]);
  return { t, f: not(t) };
}

function literalCel(x: JsonValue): string {
  if (x === null) return 'null';
  if (typeof x === 'string') return JSON.stringify(x);
  if (typeof x === 'number') return celNumber(x);
  return String(x);
}

function pathAndLiteral(
  a: Operand,
  b: Operand,
  op: string,
): [Extract<Operand, { kind: 'path' }>, Extract<Operand, { kind: 'literal' }>] {
  if (a.kind === 'path' && b.kind === 'literal') return [a, b];
  if (a.kind === 'literal' && b.kind === 'path') return [b, a];
  throw new NoCelForm(`${op} between two paths, or with length(): compare a path with a literal`);
}

function typedGuard(
  o: Extract<Operand, { kind: 'path' }>,
  ctx: SelectContext,
  scope: ElementScope | null,
  celOf: (v: string) => string,
  test: (v: JsonValue) => boolean,
  what: string,
): void {
  ctx.guards.add(pathGuard(o.path, scope?.list, celOf, test, what));
}

function printableGuard(
  o: Extract<Operand, { kind: 'path' }>,
  ctx: SelectContext,
  scope: ElementScope | null,
): void {
  typedGuard(o, ctx, scope, celPrintable, isPrintable, 'a string, boolean or small integer');
}

function notStringGuard(
  o: Extract<Operand, { kind: 'path' }>,
  ctx: SelectContext,
  scope: ElementScope | null,
): void {
  typedGuard(
    o,
    ctx,
    scope,
    (v) => `type(${v}) != string`,
    (v) => typeof v !== 'string',
    'not a string (compared with a number)',
  );
}

function numberGuard(
  o: Extract<Operand, { kind: 'path' }>,
  ctx: SelectContext,
  scope: ElementScope | null,
): void {
  typedGuard(
    o,
    ctx,
    scope,
    (v) => `type(${v}) == int || type(${v}) == double`,
    (v) => typeof v === 'number',
    'a number (ordered against a number)',
  );
}
