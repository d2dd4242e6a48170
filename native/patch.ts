import { JsonValue } from '../util/json';
import type { CompiledJsonPath } from '../jsonpath';
import type { CompiledPatchOperation, CompiledRule } from '../rule/compile';
import { compileSharedTemplate } from '../template';
import { parseModRuleValue } from '../rule/value';
import { escapeToken } from '../patch/pointer';
import { and, celString, celValue, not, or, ternary, UnsupportedValueError } from './cel';
import { pathGuard } from './guard';
import { celListAt, celOptional, FieldPath, Token } from './path';
import { compileSelection, Selection } from './select';
import { ELEMENT, elementShapeGuard, Read, SelectContext } from './select-context';
import { compileTemplateBody } from './template';
import { isScalarTemplate, yamlScalar } from './yaml';
import { yamlTemplate } from './yaml-template';
import { NoCelForm } from './values';

/*
 * A Patch rule's operations as one JSONPatch expression. KubeMod resolves every operation against the rule's input
 * object, then applies them in order with evanphx/json-patch (add creates missing parents and replaces an existing
 * member, replace needs the path, remove of a missing path does nothing), and drops all of them when one fails.
 * A JSONPatch expression is likewise computed from `object` and applied in order; parents are created explicitly,
 * and the whole list is [] when a replace would fail.
 */

/** A written path: literal tokens, '*' for any element of a list. */
export type Pattern = ReadonlyArray<Token | '*'>;

/** One operation as the idempotence and overlap checks see it. */
export interface OperationEffect {
  readonly index: number;
  readonly op: 'add' | 'replace' | 'remove';
  readonly writes: Pattern;
  /** Appends to a list (add at `-` or `-1`). */
  readonly append: boolean;
  /** Runs for every matching object (no select). */
  readonly unconditional: boolean;
  /** The constant value written, when it is one. */
  readonly constant?: JsonValue;
  /** A value written by `imageWithRegistry R ...` alone: the registry of every reference it writes. */
  readonly writtenRegistry?: string;
  /** A templated YAML value's structure (printed values as placeholders), when it is one. */
  readonly shape?: JsonValue;
  /** The operation's select, compiled (as the engine runs it) and as CEL sees it. */
  readonly select?: CompiledJsonPath;
  readonly selection?: Selection;
  /** Where the written path is below the selected element (iterated selects). */
  readonly tail?: readonly Token[];
  /** Reads of the operation (select and value). */
  readonly reads: readonly Read[];
}

/** The compiled patch section. */
export interface CompiledPatch {
  /** CEL list(JSONPatch). */
  readonly cel: string;
  readonly effects: readonly OperationEffect[];
}

const INDEX = /^(?:0|[1-9]\d*)$/;
type Effect = Omit<OperationEffect, 'reads'>;
type Operation = { cel: string; ok: string; effect: Effect };

/** Compiles rule.patch; guards and reads go to ctx. Throws NoCelForm naming the operation. */
export function compilePatch(rule: CompiledRule, ctx: SelectContext): CompiledPatch {
  const effects: OperationEffect[] = [];
  const lists: string[] = [];
  const oks: string[] = [];
  rule.patch.forEach((op, i) => {
    const own: SelectContext = { guards: ctx.guards, reads: [], podController: ctx.podController };
    let compiled: Operation;
    try {
      compiled = compileOperation(op, i, own, effects);
    } catch (err) {
      if (err instanceof NoCelForm || err instanceof UnsupportedValueError)
        throw new NoCelForm(`spec.patch[${i}]: ${err.message}`);
      throw err;
    }
    for (const r of own.reads) ctx.reads.push(r);
    lists.push(compiled.cel);
    oks.push(compiled.ok);
    effects.push({ ...compiled.effect, reads: own.reads });
  });
  const all = lists.length === 1 ? lists[0] : lists.map((l) => `(${l})`).join(' + ');
  return { cel: ternary(and(oks), all, '[]'), effects };
}

function compileOperation(
  op: CompiledPatchOperation,
  index: number,
  ctx: SelectContext,
  earlier: readonly OperationEffect[],
): Operation {
  const selection = op.select ? compileSelection(op.select.ast, ctx) : undefined;
  if (selection?.kind === 'boolean') throw new NoCelForm('a select that yields a boolean');
  if (selection?.kind === 'iterated') return iteratedOperation(op, selection, index, earlier, ctx);
  const tokens = op.tokens.map((t) => {
    if (typeof t !== 'string') throw new NoCelForm('a #N placeholder without an iterating select');
    return INDEX.test(t) ? Number(t) : t;
  });
  const selected = selection?.path;
  const value = valueOf(op, ctx, { selected });
  const body = literalOperation(op.op, tokens, value, index, earlier, !selected, ctx);
  if (!selected) return body;
  // A definite select: the operation runs when the select has a value.
  const has = `${celOptional(selected)}.hasValue()`;
  return {
    cel: ternary(has, body.cel, '[]'),
    ok: or([not(has), body.ok]),
    effect: { ...body.effect, unconditional: false, selection, select: op.select },
  };
}

/** A value in CEL: constant, or a template rendered to a YAML scalar. */
interface Value {
  readonly cel: string;
  readonly constant?: JsonValue;
  /** A templated YAML value's structure, printed values as placeholders. */
  readonly shape?: JsonValue;
  /** The registry of the references an imageWithRegistry value writes. */
  readonly registry?: string;
}

function valueOf(
  op: CompiledPatchOperation,
  ctx: SelectContext,
  scope: { selected?: FieldPath; list?: FieldPath },
): Value | undefined {
  const v = op.value;
  if (v.kind === 'none') return undefined;
  if (v.kind === 'constant') return { cel: celValue(v.value), constant: v.value };
  // The template's parse tree, shared by text with the rule's own (interned: no second parse).
  const tree = compileSharedTemplate(v.template.source).tree;
  if (tree.defines.size > 0) throw new NoCelForm('templates that define templates');
  const rendered = compileTemplateBody(tree.root, { ...scope, ctx });
  if (rendered.constant !== undefined) {
    const constant = parseModRuleValue(rendered.constant);
    return { cel: celValue(constant), constant };
  }
  if (!scope.list && !isScalarTemplate(tree.root)) return yamlTemplate(tree.root, ctx);
  const cel = yamlScalar(rendered, tree.root, ctx, scope.list);
  return rendered.registry === undefined ? { cel } : { cel, registry: rendered.registry };
}

function pointer(tokens: readonly Token[]): string {
  return tokens.map((t) => `/${escapeToken(String(t))}`).join('');
}

/** The value add creates for missing parents: {t1: {t2: ... value}}. */
function nest(tokens: readonly Token[], value: string): string {
  let out = value;
  for (let i = tokens.length - 1; i >= 0; i--) out = `{${celString(String(tokens[i]))}: dyn(${out})}`;
  return out;
}

function jsonPatch(op: string, path: string, value?: string): string {
  return `JSONPatch{op: ${celString(op)}, path: ${path}${value === undefined ? '' : `, value: ${value}`}}`;
}

function literalOperation(
  op: CompiledPatchOperation['op'],
  tokens: readonly Token[],
  value: Value | undefined,
  index: number,
  earlier: readonly OperationEffect[],
  unconditional: boolean,
  ctx: SelectContext,
): Operation {
  const last = tokens[tokens.length - 1];
  const append = op === 'add' && (last === '-' || last === '-1');
  const target = append ? tokens.slice(0, -1) : tokens;
  if (target.length === 0) throw new NoCelForm('an operation on the whole object');
  if (target[0] === 'metadata' && target[1] === 'managedFields')
    throw new NoCelForm('metadata.managedFields (hidden from rules by the webhook)');
  const path: FieldPath = { root: { kind: 'object' }, tokens: target };
  const effect: Effect = {
    index,
    op,
    writes: append ? [...target, '*'] : target,
    append,
    unconditional,
    constant: value?.constant,
    shape: value?.shape,
  };
  shapeGuards(target, append, op, ctx);
  const opt = celOptional(path);
  if (op === 'remove') {
    if (typeof last === 'number') removableElement(target, last, ctx);
    return {
      cel: ternary(`${opt}.hasValue()`, `[${jsonPatch('remove', celString(pointer(tokens)))}]`, '[]'),
      ok: 'true',
      effect,
    };
  }
  if (!value) throw new NoCelForm(`${op} without a value`);
  if (op === 'replace') {
    return {
      cel: `[${jsonPatch('replace', celString(pointer(tokens)), value.cel)}]`,
      ok: `${opt}.hasValue()`,
      effect,
    };
  }
  if (typeof last === 'number') throw new NoCelForm('add at a list index inserts (not idempotent)');
  // add: when a parent is missing, the shallowest missing one is added with the rest of the path nested in it.
  const leaf = append ? `[dyn(${value.cel})]` : value.cel;
  let cel = `[${jsonPatch('add', celString(append ? `${pointer(target)}/-` : pointer(target)), value.cel)}]`;
  for (let k = append ? target.length : target.length - 1; k >= 1; k--) {
    const prefix = target.slice(0, k);
    if (knownToExist(prefix, index, earlier)) continue;
    const created = `[${jsonPatch('add', celString(pointer(prefix)), nest(target.slice(k), leaf))}]`;
    cel = ternary(`${celOptional({ root: { kind: 'object' }, tokens: prefix })}.hasValue()`, cel, created);
  }
  return { cel, ok: 'true', effect };
}

/**
 * Removing element i of a list is idempotent only where the list has at most i+1 elements: afterwards there is no
 * element i, and removing a missing element does nothing (in KubeMod, AllowMissingPathOnRemove, and in the CEL,
 * which removes only what exists). Longer lists go to the webhook, which removes as KubeMod does.
 */
function removableElement(target: readonly Token[], index: number, ctx: SelectContext): void {
  const list: FieldPath = { root: { kind: 'object' }, tokens: target.slice(0, -1) };
  ctx.guards.add(
    pathGuard(
      list,
      undefined,
      (v) => `type(${v}) != list || size(${v}) <= ${index + 1}`,
      (v) => !Array.isArray(v) || v.length <= index + 1,
      `at most ${index + 1} element(s) in the list an element is removed from`,
    ),
  );
}

/**
 * Containers along the path must be absent or of the kind the next token needs (null or a scalar there sends the
 * object to the webhook, where the rule fails as in KubeMod), and a list element named on the way must exist
 * (add would insert one).
 */
function shapeGuards(target: readonly Token[], append: boolean, op: string, ctx: SelectContext): void {
  const probe = append ? [...target, 0] : target;
  for (let i = 1; i < probe.length; i++) {
    const prefix = probe.slice(0, i);
    const want = typeof probe[i] === 'number' ? 'list' : 'map';
    const existing = typeof probe[i - 1] === 'number';
    ctx.guards.add(
      pathGuard(
        { root: { kind: 'object' }, tokens: prefix },
        undefined,
        (v) => `type(${v}) == ${want}`,
        (v) =>
          want === 'list' ? Array.isArray(v) : v !== null && typeof v === 'object' && !Array.isArray(v),
        `a ${want} at ${pointer(prefix)}`,
        // add through a list element needs the element; replace and remove fail or do nothing without it.
        !(existing && op === 'add'),
      ),
    );
  }
}

/** A parent an earlier unconditional add or replace of this rule wrote below exists when this one runs. */
function knownToExist(prefix: readonly Token[], index: number, earlier: readonly OperationEffect[]): boolean {
  for (const e of earlier) {
    if (!below(e.writes, prefix)) continue;
    if (e.unconditional && e.op !== 'remove' && !e.append && !e.writes.includes('*')) return true;
    throw new NoCelForm(
      `operations ${e.index} and ${index} both write below ${pointer(prefix)}, and ${e.index} does not always ` +
        'create it',
    );
  }
  return false;
}

/** Whether a written pattern lies strictly below a prefix ('*' matches any token). */
function below(writes: Pattern, prefix: Pattern): boolean {
  if (writes.length <= prefix.length) return false;
  return prefix.every((t, i) => writes[i] === '*' || t === '*' || writes[i] === t);
}

function iteratedOperation(
  op: CompiledPatchOperation,
  selection: Extract<Selection, { kind: 'iterated' }>,
  index: number,
  earlier: readonly OperationEffect[],
  ctx: SelectContext,
): Operation {
  const list = selection.list;
  const n = list.tokens.length;
  const marker = op.tokens[n];
  const sameList = op.tokens
    .slice(0, n)
    .every((t, i) => typeof t === 'string' && t === String(list.tokens[i]));
  if (!sameList || !Array.isArray(marker) || marker.length !== 1 || marker[0] !== 0)
    throw new NoCelForm('the path must lead into the list the select iterates: <list>/#0/...');
  const tail = op.tokens.slice(n + 1).map((t) => {
    if (typeof t !== 'string') throw new NoCelForm('more than one placeholder');
    return INDEX.test(t) ? Number(t) : t;
  });
  if ((tail.length === 0 || typeof tail[tail.length - 1] === 'number') && op.op !== 'replace')
    throw new NoCelForm(`${op.op} of a list element (not idempotent)`);
  const element = (tokens: readonly Token[]): FieldPath => ({
    root: { kind: 'element', variable: ELEMENT },
    tokens,
  });
  // Parents below the element that an earlier operation also writes under would be created twice.
  for (let k = 1; k < tail.length; k++) {
    const shared = [...list.tokens, '*', ...tail.slice(0, k)];
    const other = earlier.find((e) => below(e.writes, shared));
    if (other)
      throw new NoCelForm(
        `operations ${other.index} and ${index} both write below ${pointer(tail.slice(0, k))}`,
      );
  }
  // Every container from the element down to the written member: a null or scalar element would make add insert.
  ctx.guards.add(elementShapeGuard(list, tail, 'each element has the shape the path needs'));
  const suffix = element(selection.suffix);
  const keep = and([selection.filter, `${celOptional(suffix)}.hasValue()`]);
  const value = valueOf(op, ctx, { selected: suffix, list });
  const at = (tokens: readonly Token[]) =>
    `${celString(`${pointer(list.tokens)}/`)} + string(i)${tokens.length > 0 ? ` + ${celString(pointer(tokens))}` : ''}`;
  const target = celOptional(element(tail));
  const over = (filter: string, patch: string) =>
    `${celListAt(list)}.transformList(i, ${ELEMENT}, ${filter}, ${patch})`;
  const effect: Effect = {
    index,
    op: op.op,
    writes: [...list.tokens, '*', ...tail],
    append: false,
    unconditional: false,
    constant: value?.constant,
    ...(value?.registry === undefined ? {} : { writtenRegistry: value.registry }),
    selection,
    select: op.select,
    tail,
  };
  if (op.op === 'remove')
    return {
      cel: over(and([keep, `${target}.hasValue()`]), jsonPatch('remove', at(tail))),
      ok: 'true',
      effect,
    };
  if (!value) throw new NoCelForm(`${op.op} without a value`);
  if (op.op === 'replace') {
    return {
      cel: over(keep, jsonPatch('replace', at(tail), value.cel)),
      ok: `${celListAt(list)}.all(${ELEMENT}, ${or([not(keep), `${target}.hasValue()`])})`,
      effect,
    };
  }
  let patch = jsonPatch('add', at(tail), value.cel);
  for (let k = tail.length - 1; k >= 1; k--) {
    const prefix = tail.slice(0, k);
    patch = ternary(
      `${celOptional(element(prefix))}.hasValue()`,
      patch,
      jsonPatch('add', at(prefix), nest(tail.slice(k), value.cel)),
    );
  }
  return { cel: over(keep, patch), ok: 'true', effect };
}
