import type { JsonPathNode, PathNode } from '../jsonpath';
import { MAX_LIST, shapeGuard, valueGuard } from './guard';
import { FieldPath, Token } from './path';
import { ElementScope, pathOperand, predicate, truthy } from './predicate';
import { definite, elementShapeGuard, SelectContext, tokenOf } from './select-context';
import { NoCelForm } from './values';

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
