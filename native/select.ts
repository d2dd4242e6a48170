import { JsonValue } from '../util/json';
import type { JsonPathNode, PathNode, Segment } from '../jsonpath';
import { LAST_APPLIED_ANNOTATION } from '../modrule/types';
import { and, celNumber, not, or } from './cel';
import {
  celPrint,
  celPrintable,
  everyElementGuard,
  Guard,
  Guards,
  isPrintable,
  MAX_LIST,
  pathGuard,
  shapeGuard,
  valueGuard,
} from './guard';
import { celOptional, celShape, celValueOrNull, FieldPath, shapeHolds, Token } from './path';
import { celLength, celLengthDefined, celLooseEquals, NoCelForm } from './values';

/*
 * KubeMod selects as CEL. Supported: definite paths (names, non-negative indices) from `$`, from
 * `$.syntheticRefs.namespace` (namespaceObject) and, in filters, from `@`; one list iteration (`[*]` or a filter)
 * followed by names; boolean expressions of comparisons with literals, =~ with a literal RE2 pattern, `in` a list
 * of literals, length/isEmpty/isNotEmpty/isDefined/isUndefined, !, && and ||.
 */

/** What a select yields, in a form the match and patch compilers can use. */
export type Selection =
  /** One value or none. */
  | { readonly kind: 'definite'; readonly path: FieldPath }
  /** One result per list element that passes the filter and has the suffix. */
  | {
      readonly kind: 'iterated';
      readonly list: FieldPath;
      /** CEL of the filter with the element in variable ELEMENT (`true` when there is no filter). */
      readonly filter: string;
      readonly suffix: readonly Token[];
      /** The filter's paths relative to the element (reads, for the idempotence checks). */
      readonly filterReads: readonly (readonly Token[])[];
    }
  /** A boolean expression (true, false, or neither: an evaluation error or undefined). */
  | { readonly kind: 'boolean'; readonly isTrue: string };

/**
 * A path a rule reads, from the object (or the namespace); '*' for any element of an iterated list. `iterate`: only
 * which elements the list has is read (a write below an element does not change it).
 */
export interface Read {
  readonly root: 'object' | 'namespace';
  readonly tokens: ReadonlyArray<Token | '*'>;
  readonly iterate?: boolean;
}

/** Where the compiler is while compiling one select: the guards it adds, the paths it reads. */
export interface SelectContext {
  readonly guards: Guards;
  readonly reads: Read[];
}

/** Compiles a select's AST; throws NoCelForm with the reason when it has no CEL form here. */
export function compileSelection(ast: JsonPathNode, ctx: SelectContext): Selection {
  if (ast.kind === 'path') {
    if (ast.root !== '$') throw new NoCelForm('a select must start at $');
    const ambiguous = ast.segments.findIndex((s) => s.type !== 'name' && s.type !== 'index');
    if (ambiguous < 0) {
      const path = definite(ast, ctx);
      ctx.guards.add(shapeGuard(path, `containers along ${ast.column}`));
      return { kind: 'definite', path };
    }
    return iterated(ast, ambiguous, ctx);
  }
  const pred = predicate(ast, ctx, null);
  return { kind: 'boolean', isTrue: pred.t };
}

/** A definite path from `$` (or from `$.syntheticRefs.namespace`), with its read recorded. */
function definite(ast: PathNode, ctx: SelectContext, segments = ast.segments, iterate = false): FieldPath {
  const tokens = segments.map(tokenOf);
  return fromObjectTokens(tokens, ctx, iterate);
}

function fromObjectTokens(tokens: readonly Token[], ctx: SelectContext, iterate: boolean): FieldPath {
  if (tokens[0] === 'syntheticRefs') {
    if (tokens[1] !== 'namespace') {
      throw new NoCelForm(syntheticRefsMisfit(String(tokens[1])));
    }
    const rest = tokens.slice(2);
    const ok =
      rest.length === 0 ||
      (rest[0] === 'metadata' &&
        (rest.length === 1 ||
          (rest[1] === 'name' && rest.length === 2) ||
          ((rest[1] === 'labels' || rest[1] === 'annotations') &&
            rest.length <= 3 &&
            rest[2] !== LAST_APPLIED_ANNOTATION)));
    if (!ok || rest.length < 2) {
      throw new NoCelForm(
        'only metadata.name, metadata.labels and metadata.annotations of syntheticRefs.namespace compile ' +
          '(namespaceObject is typed, and the reference drops managedFields and last-applied-configuration)',
      );
    }
    ctx.reads.push({ root: 'namespace', tokens: [...rest] });
    return { root: { kind: 'namespace' }, tokens: rest };
  }
  if (tokens[0] === 'metadata' && tokens[1] === 'managedFields') {
    throw new NoCelForm('metadata.managedFields: the webhook hides it from rules, policies see it');
  }
  if (tokens.length === 0) throw new NoCelForm('a select of the whole object');
  ctx.reads.push(iterate ? { root: 'object', tokens, iterate } : { root: 'object', tokens });
  return { root: { kind: 'object' }, tokens };
}

function tokenOf(s: Segment): Token {
  if (s.type === 'name') {
    // gval turns `.0` on a list into an index; which one it is depends on the object: not compiled.
    if (/^(?:0|[1-9]\d*)$/.test(s.name))
      throw new NoCelForm(`a name that reads as a list index (.${s.name})`);
    return s.name;
  }
  if (s.type === 'index') {
    if (s.index < 0) throw new NoCelForm(`negative index [${s.index}]`);
    return s.index;
  }
  throw new NoCelForm(`${s.type} step`);
}

function iterated(ast: PathNode, at: number, ctx: SelectContext): Selection {
  const seg = ast.segments[at];
  if (seg.type !== 'wildcard' && seg.type !== 'filter') {
    throw new NoCelForm(
      seg.type === 'descent'
        ? 'recursive descent (..) has no bounded CEL form'
        : `${seg.type} selectors are not compiled`,
    );
  }
  const rest = ast.segments.slice(at + 1);
  if (rest.some((s) => s.type !== 'name' && s.type !== 'index')) {
    throw new NoCelForm(
      'more than one wildcard or filter in one select: the compiler writes one level of list iteration ' +
        '(nested iteration multiplies CEL cost by each list size, against the API server per-expression limit)',
    );
  }
  const list = definite(ast, ctx, ast.segments.slice(0, at), true);
  if (list.root.kind !== 'object') throw new NoCelForm('iteration over syntheticRefs');
  const suffix = rest.map(tokenOf);
  const reads = ctx.reads;
  // The element's reads, as paths from the object through the list.
  const elementRead = (tokens: readonly Token[]) =>
    reads.push({ root: 'object', tokens: [...list.tokens, '*', ...tokens] });
  if (suffix.length > 0) elementRead(suffix);
  ctx.guards.add(shapeGuard({ root: list.root, tokens: [...list.tokens, 0] }, 'the list is a list'));
  ctx.guards.add(
    valueGuard(
      list,
      (v) => `type(${v}) != list || size(${v}) <= ${MAX_ITERATED}`,
      (v) => !Array.isArray(v) || v.length <= MAX_ITERATED,
      `at most ${MAX_ITERATED} elements to iterate`,
    ),
  );
  const filterReads: Token[][] = [];
  let filter = 'true';
  if (seg.type === 'filter') {
    const elementCtx: ElementScope = { list, reads: filterReads };
    filter =
      seg.predicate.kind === 'path'
        ? truthy(pathOperand(seg.predicate, ctx, elementCtx))
        : predicate(seg.predicate, ctx, elementCtx).t;
    for (const r of filterReads) elementRead(r);
  }
  if (suffix.length > 0) {
    ctx.guards.add(elementShapeGuard(list, suffix, 'each element has the shape the suffix reads'));
  }
  return { kind: 'iterated', list, filter, suffix, filterReads };
}

/**
 * Longest list a policy iterates. CEL's runtime cost grows with the list (the API server stops an expression at
 * 1,000,000 units: a 40,000-element list already does, see docs/native.md); longer lists go to the webhook.
 */
export const MAX_ITERATED = MAX_LIST;

/** The CEL variable list elements are bound to in generated comprehensions (one level of iteration only). */
export const ELEMENT = 'el';

/** Every element of the list has the shape a path below it needs (see celShape). */
export function elementShapeGuard(list: FieldPath, tokens: readonly Token[], what: string): Guard {
  const path: FieldPath = { root: { kind: 'element', variable: ELEMENT }, tokens };
  return everyElementGuard(list, ELEMENT, celShape(path), (el) => shapeHolds(path, el), what);
}

/** A filter keeps an element when its predicate is true, a number other than 0, or "true"/"TRUE" (gval's bool). */
function truthy(o: Operand): string {
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
interface ElementScope {
  readonly list: FieldPath;
  readonly reads: Token[][];
}

/** A predicate in three-valued logic: CEL for "is true" and for "is false" (an error is neither). */
interface Pred {
  readonly t: string;
  readonly f: string;
}

type Operand =
  | { kind: 'path'; path: FieldPath; element: boolean }
  | { kind: 'literal'; value: JsonValue }
  | { kind: 'length'; path: FieldPath; element: boolean };

function operand(node: JsonPathNode, ctx: SelectContext, scope: ElementScope | null): Operand {
  if (node.kind === 'literal') return { kind: 'literal', value: node.value };
  if (node.kind === 'path') return pathOperand(node, ctx, scope);
  if (node.kind === 'call' && node.name === 'length') {
    const inner = operand(node.args[0], ctx, scope);
    if (inner.kind !== 'path') throw new NoCelForm('length() of something other than a path');
    return { kind: 'length', path: inner.path, element: inner.element };
  }
  throw new NoCelForm(`${node.kind === 'call' ? `${node.name}()` : node.kind} as an operand`);
}

function pathOperand(node: PathNode, ctx: SelectContext, scope: ElementScope | null): Operand {
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

function predicate(node: JsonPathNode, ctx: SelectContext, scope: ElementScope | null): Pred {
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
  if (o.kind !== 'path') throw new NoCelForm(`${name}() of something other than a path`);
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
  if (op === '=~' || op === '!~') {
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

/** CEL regex literal (RE2 in both: KubeMod's Go regexp, CEL's matches()). */
export function celRegex(pattern: string): string {
  return JSON.stringify(pattern);
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

/** Why a syntheticRefs entry other than the namespace has no CEL form. */
export function syntheticRefsMisfit(key: string): string {
  if (key === 'node') return 'syntheticRefs.node has no counterpart in admission CEL (policies see no Node)';
  if (key === 'owner')
    return 'syntheticRefs.owner has no counterpart in admission CEL (policies see no owner of the object)';
  return `syntheticRefs.${key} has no counterpart in admission CEL (policies read no other objects)`;
}
