import type { PathNode, Segment } from '../jsonpath';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import type { PodTemplateAt } from '../rule/compile';
import { everyElementGuard, Guard, Guards } from './guard';
import { celShape, FieldPath, shapeHolds, Token } from './path';
import { NoCelForm } from './values';

// What compiling one select shares: the context (guards added, paths read), definite paths from `$` or from
// `$.syntheticRefs.namespace`, and the variable list elements are bound to.

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
  /** For a Pod rule's controller variant: where its templates' .Target (the pod view) is in the object. */
  readonly podController?: PodTemplateAt;
}

/** A definite path from `$` (or from `$.syntheticRefs.namespace`), with its read recorded. */
export function definite(
  ast: PathNode,
  ctx: SelectContext,
  segments = ast.segments,
  iterate = false,
): FieldPath {
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

/** A path step as a CEL field or index; throws NoCelForm for steps that are not definite. */
export function tokenOf(s: Segment): Token {
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

/** The CEL variable list elements are bound to in generated comprehensions (one level of iteration only). */
export const ELEMENT = 'el';

/** Every element of the list has the shape a path below it needs (see celShape). */
export function elementShapeGuard(list: FieldPath, tokens: readonly Token[], what: string): Guard {
  const path: FieldPath = { root: { kind: 'element', variable: ELEMENT }, tokens };
  return everyElementGuard(list, ELEMENT, celShape(path), (el) => shapeHolds(path, el), what);
}

/** Why a syntheticRefs entry other than the namespace has no CEL form. */
export function syntheticRefsMisfit(key: string): string {
  if (key === 'node') return 'syntheticRefs.node has no counterpart in admission CEL (policies see no Node)';
  if (key === 'owner')
    return 'syntheticRefs.owner has no counterpart in admission CEL (policies see no owner of the object)';
  return `syntheticRefs.${key} has no counterpart in admission CEL (policies read no other objects)`;
}
