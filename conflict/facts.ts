import { createHash } from 'node:crypto';
import { isJsonObject, JsonValue } from '../util/json';
import type { CompiledMatchItem, CompiledRule } from '../rule/compile';
import { pinnedValues } from '../rule/pins';
import { effectsOf } from '../native';
import { formatPointer } from '../patch/pointer';

/*
 * What the conflict checks read off one rule, once per compiled rule (cached): which objects it can match (kinds,
 * exact values of fixed fields, fields it requires absent), what it writes (paths, constant values, and the shape
 * each write gives the containers on its path) and, for Reject rules, what its criteria read. Paths are JSON
 * pointers with every list position (an index, `-`, a #N placeholder) written `*`.
 */

/** What a write makes of the value at a path: a list, an object or a scalar. */
export type Shape = 'list' | 'object' | 'scalar';

/** One operation of spec.patch as the checks see it. */
export interface Write {
  /** Its index in spec.patch. */
  readonly index: number;
  readonly op: 'add' | 'replace' | 'remove';
  /** The path, list positions as `*`. */
  readonly path: string;
  readonly tokens: readonly string[];
  /** Its first two tokens (`spec/template`): where Reject rules' reads are looked up. */
  readonly head: string;
  /** The constant value as JSON text; undefined for a template value or a remove. */
  readonly value?: string;
  /** Appends to a list (`-`) or inserts at an index: a later write moves it, never undoes it. */
  readonly insert: boolean;
  /** Its #N placeholders come from a select with a filter: which elements it writes depends on their content. */
  readonly filtered: boolean;
}

/** A shape a write gives a path (a container on its way, or its constant value). */
export interface ShapeFact {
  readonly path: string;
  readonly shape: Shape;
  /** The operation it comes from (spec.patch index). */
  readonly index: number;
}

/** Everything the checks need of one rule. */
export interface RuleFacts {
  readonly rule: CompiledRule;
  /** Kinds it can match (`$.kind` criteria); null: any. */
  readonly kinds: ReadonlySet<string> | null;
  /** Exact values a fixed field must have (`$.metadata.labels.app` matchValue web), by select path. */
  readonly fixed: ReadonlyMap<string, ReadonlySet<string>>;
  /** Fixed fields it requires absent (a negated criterion without a value), or not to hold these values. */
  readonly excluded: ReadonlyMap<string, ReadonlySet<string> | 'absent'>;
  readonly writes: readonly Write[];
  readonly shapes: readonly ShapeFact[];
  /** Paths its criteria and messages read; 'all' when they cannot be pinned down. */
  readonly reads: readonly string[] | 'all';
  /**
   * What it does, apart from its name (and its namespace unless it reads it): rules generated from one template
   * share it, so what running them shows is learnt once (conflict/runs.ts).
   */
  readonly signature: string;
}

const cache = new WeakMap<CompiledRule, RuleFacts>();

/** The facts of a rule, computed once per compiled rule. */
export function factsOf(rule: CompiledRule): RuleFacts {
  let facts = cache.get(rule);
  if (!facts) cache.set(rule, (facts = computeFacts(rule)));
  return facts;
}

const LIST_POSITION = /^(?:0|-?[1-9]\d*|-)$/;

/** The tokens of a fixed select (`$.a.b`), or undefined for anything else. */
export function fixedPath(item: CompiledMatchItem): string | undefined {
  const ast = item.select.ast;
  if (ast.kind !== 'path' || ast.root !== '$' || ast.segments.length === 0) return undefined;
  const names: string[] = [];
  for (const s of ast.segments) {
    if (s.type !== 'name') return undefined;
    names.push(s.name);
  }
  return names.join('.');
}

function computeFacts(rule: CompiledRule): RuleFacts {
  const fixed = new Map<string, Set<string>>();
  const excluded = new Map<string, Set<string> | 'absent'>();
  for (const item of rule.match) {
    const path = fixedPath(item);
    if (path === undefined) continue;
    const values = item.matchValue !== undefined ? [item.matchValue] : item.matchValues;
    if (item.negate) {
      if (values === undefined && item.matchRegex === undefined) excluded.set(path, 'absent');
      else if (values !== undefined && excluded.get(path) !== 'absent') excluded.set(path, new Set(values));
    } else if (values !== undefined) {
      const before = fixed.get(path);
      fixed.set(path, before ? new Set(values.filter((v) => before.has(v))) : new Set(values));
    }
  }
  const writes: Write[] = [];
  const shapes: ShapeFact[] = [];
  rule.patch.forEach((op, index) => {
    const tokens = op.tokens.map((t) => (typeof t !== 'string' || LIST_POSITION.test(t) ? '*' : t));
    const path = pointer(tokens);
    const last = op.tokens[op.tokens.length - 1];
    const constant = op.value.kind === 'constant' ? op.value.value : undefined;
    writes.push({
      index,
      op: op.op,
      path,
      tokens,
      head: tokens.slice(0, 2).join('/'),
      value: op.op === 'remove' || constant === undefined ? undefined : JSON.stringify(constant),
      insert: op.op === 'add' && (typeof last !== 'string' || LIST_POSITION.test(last)),
      filtered: op.hasPlaceholders && (op.select?.source.includes('?') ?? false),
    });
    for (let i = 0; i < tokens.length - 1; i++) {
      // A #N placeholder stands for a member name or an index, as its select finds: no shape said for its parent.
      if (typeof op.tokens[i + 1] !== 'string') continue;
      shapes.push({
        path: pointer(tokens.slice(0, i + 1)),
        shape: tokens[i + 1] === '*' ? 'list' : 'object',
        index,
      });
    }
    if (constant !== undefined && op.op !== 'remove') valueShapes(tokens, constant, index, shapes, 0);
  });
  const effects = effectsOf(rule);
  const reads =
    effects.reads === 'all'
      ? 'all'
      : effects.reads
          .filter((r) => r.root === 'object')
          .map((r) => pointer(r.tokens.map((t) => (typeof t === 'number' || t === '*' ? '*' : t))));
  const kinds = pinnedValues(rule.match, 'kind');
  return { rule, kinds, fixed, excluded, writes, shapes, reads, signature: signatureOf(rule) };
}

/** A digest of everything the rule does but its name (and namespace, unless a select or template may read it). */
function signatureOf(rule: CompiledRule): string {
  const text = JSON.stringify([
    rule.type,
    rule.tier,
    [...rule.operations].sort(),
    rule.enforcement,
    rule.match.map((m) => [
      m.select.source,
      m.matchValue,
      m.matchValues,
      m.matchRegex?.source,
      m.matchFor,
      m.negate,
    ]),
    rule.patch.map((p) => [
      p.op,
      p.path,
      p.select?.source,
      p.value.kind === 'constant'
        ? p.value.value
        : p.value.kind === 'template'
          ? p.value.template.source
          : null,
    ]),
    rule.rejectMessage?.source,
  ]);
  const namespace = /namespace/i.test(text) ? rule.namespace : '';
  return createHash('sha256').update(namespace).update('\u0000').update(text).digest('base64');
}

/** Deepest level of a constant value whose shapes are recorded (values are small; this bounds the hostile ones). */
const MAX_VALUE_DEPTH = 8;

function valueShapes(tokens: string[], v: JsonValue, index: number, out: ShapeFact[], depth: number): void {
  const shape: Shape = Array.isArray(v) ? 'list' : isJsonObject(v) ? 'object' : 'scalar';
  out.push({ path: pointer(tokens), shape, index });
  if (depth >= MAX_VALUE_DEPTH) return;
  if (Array.isArray(v)) {
    for (const e of v.slice(0, 1)) valueShapes([...tokens, '*'], e, index, out, depth + 1);
  } else if (isJsonObject(v)) {
    for (const [k, e] of Object.entries(v)) valueShapes([...tokens, k], e, index, out, depth + 1);
  }
}

/** Tokens as a JSON pointer (`*` stays as it is). */
export function pointer(tokens: ReadonlyArray<string | number>): string {
  return formatPointer(tokens.map(String));
}
