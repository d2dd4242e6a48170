import { JsonValue } from '../util/json';
import type { CompiledMatchItem, CompiledRule } from '../rule/compile';
import { Token } from './path';
import type { OperationEffect, Pattern } from './patch';
import type { Read } from './select-context';
import { goTextEquals } from './values';

/*
 * What a rule reads and writes, as path patterns, and the checks built on them:
 * - idempotence: applying the rule to its own result changes nothing. The native path needs it: while a rule
 *   moves between paths both may apply it, the webhook applies it again to objects the policy patched when their
 *   guards no longer hold, and the API server re-runs policies (reinvocation) after webhooks change the object.
 * - overlap between two rules (operator/native/controller.ts): a rule served natively runs before every webhook-served one,
 *   whatever its tier, so it may move only when it neither reads nor writes what another rule writes.
 */

/** Whether two patterns overlap: one lies on the other's path ('*' matches any token). */
export function overlaps(a: Pattern, b: Pattern): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== '*' && b[i] !== '*' && a[i] !== b[i]) return false;
  return true;
}

/** Whether a write changes what a read sees. An iteration read only sees which elements the list has. */
export function writeAffects(write: Pattern, read: Read): boolean {
  if (read.root !== 'object') return write[0] === 'syntheticRefs';
  if (!read.iterate) return overlaps(write, read.tokens);
  // The list or an ancestor replaced, or an element added, removed or replaced.
  if (write.length <= read.tokens.length) return overlaps(write, read.tokens);
  return write.length === read.tokens.length + 1 && overlaps(write, read.tokens);
}

/** Why applying the rule twice may differ from applying it once; undefined when it provably does not. */
export function idempotenceProblem(
  rule: CompiledRule,
  effects: readonly OperationEffect[],
): string | undefined {
  for (let i = 0; i < effects.length; i++) {
    for (let j = i + 1; j < effects.length; j++) {
      const a = effects[i];
      const b = effects[j];
      if (overlaps(a.writes, b.writes))
        return `spec.patch[${a.index}] and spec.patch[${b.index}] write the same or nested paths`;
    }
  }
  for (const e of effects) {
    if (e.append) {
      const why = appendProblem(rule, e);
      if (why) return why;
    }
    for (const r of e.reads) {
      for (const w of effects) {
        if (!writeAffects(w.writes, r)) continue;
        if (w === e && filterFalsified(e, r)) continue;
        return (
          `spec.patch[${e.index}] reads ${text(r.tokens)}, which spec.patch[${w.index}] writes: ` +
          'applying the rule twice may differ from applying it once'
        );
      }
    }
  }
  return undefined;
}

/**
 * An append is idempotent when a negated Any criterion on <list>[*].<field> matches the appended element: once
 * appended, the rule no longer matches (KubeMod README, "Note on idempotency").
 */
function appendProblem(rule: CompiledRule, e: OperationEffect): string | undefined {
  const list = e.writes.slice(0, -1);
  // A templated value counts by its constant fields (printed values are placeholders: they never match).
  const value = e.constant ?? e.shape;
  const why =
    `spec.patch[${e.index}] appends to ${text(list)}: not idempotent unless a negated criterion ` +
    `'${text(list)}[*].<field>' with matchValue matches the appended element`;
  if (!value || typeof value !== 'object' || Array.isArray(value)) return why;
  const guarded = rule.match.some((item) => guardsAppend(item, list, value));
  return guarded ? undefined : why;
}

function guardsAppend(item: CompiledMatchItem, list: Pattern, value: { [k: string]: JsonValue }): boolean {
  if (!item.negate || item.matchFor !== 'Any') return false;
  const ast = item.select.ast;
  if (ast.kind !== 'path' || ast.root !== '$') return false;
  const segs = ast.segments;
  if (segs.length !== list.length + 2) return false;
  for (let i = 0; i < list.length; i++) {
    const s = segs[i];
    if (s.type !== 'name' || s.name !== list[i]) return false;
  }
  const star = segs[list.length];
  const field = segs[list.length + 1];
  if (star.type !== 'wildcard' || field.type !== 'name') return false;
  if (!Object.prototype.hasOwnProperty.call(value, field.name)) return false;
  const v = value[field.name];
  const accepted = item.matchValue !== undefined ? [item.matchValue] : (item.matchValues ?? []);
  return accepted.some((m) => goTextEquals(v, m));
}

/**
 * A filter that reads only below the path the operation writes with a constant, and is false for the written
 * value: after the write the element is no longer selected (e.g. `[? isEmpty(@.securityContext)]` writing a
 * non-empty securityContext). Checked by running the select itself on an element that holds only the written value.
 */
function filterFalsified(e: OperationEffect, read: Read): boolean {
  const sel = e.selection;
  if (sel?.kind === 'iterated' && e.writtenRegistry !== undefined && e.tail) {
    const at = [...sel.list.tokens, '*', ...e.tail];
    const same = read.tokens.length === at.length && read.tokens.every((t, i) => t === at[i]);
    return same && registryFalsified(e, e.tail);
  }
  if (sel?.kind !== 'iterated' || e.constant === undefined || !e.tail || e.tail.length === 0) return false;
  const list = sel.list.tokens;
  const rel = read.tokens.slice(list.length + 1);
  const isFilterRead =
    read.tokens.length > list.length &&
    read.tokens[list.length] === '*' &&
    sel.filterReads.some((f) => f.length === rel.length && f.every((t, i) => t === rel[i]));
  if (!isFilterRead) return false;
  // Every filter read must lie at or below the written path.
  if (!sel.filterReads.every((f) => startsWith(f, e.tail ?? []))) return false;
  const select = e.select;
  if (!select) return false;
  const element = elementHolding(e.tail, e.constant);
  if (element === undefined) return false;
  return select.select(objectHolding(list, element)).length === 0;
}

/**
 * A filter `imageRegistry(@.<tail>) == "r"` (or `in [...]`) over the references an operation rewrites with
 * `imageWithRegistry R`: every rewritten reference has R's registry, so when that is not one the filter takes, the
 * rewritten element is no longer selected (Docker Hub to a mirror, applied twice, is once).
 */
function registryFalsified(e: OperationEffect, tail: readonly Token[]): boolean {
  const ast = e.select?.ast;
  const filter = ast?.kind === 'path' ? ast.segments.find((s) => s.type === 'filter') : undefined;
  if (filter?.type !== 'filter') return false;
  const p = filter.predicate;
  if (p.kind !== 'binary' || (p.op !== '==' && p.op !== 'in')) return false;
  const call = p.left;
  if (call.kind !== 'call' || call.name !== 'imageRegistry') return false;
  const arg = call.args[0];
  if (arg.kind !== 'path' || arg.root !== '@' || arg.segments.length !== tail.length) return false;
  if (!arg.segments.every((s, i) => s.type === 'name' && s.name === tail[i])) return false;
  const taken = p.op === '==' ? [p.right] : p.right.kind === 'array' ? p.right.items : [];
  const values = taken.map((n) => (n.kind === 'literal' && typeof n.value === 'string' ? n.value : null));
  if (values.length === 0 || values.some((v) => v === null)) return false;
  return !values.includes(e.writtenRegistry ?? null);
}

/** An object with `element` as the only element of the list at `list`. */
function objectHolding(list: readonly Token[], element: JsonValue): JsonValue {
  let out: JsonValue = [element];
  for (let i = list.length - 1; i >= 0; i--) {
    const t = list[i];
    out = typeof t === 'number' ? [...(Array(t).fill({}) as JsonValue[]), out] : { [t]: out };
  }
  return out;
}

function startsWith(a: readonly Token[], prefix: readonly Token[]): boolean {
  return prefix.length <= a.length && prefix.every((t, i) => a[i] === t);
}

function elementHolding(tail: readonly Token[], value: JsonValue): JsonValue | undefined {
  let out: JsonValue = value;
  for (let i = tail.length - 1; i >= 0; i--) {
    const t = tail[i];
    if (typeof t === 'number') return undefined;
    out = { [t]: out };
  }
  return out;
}

function text(tokens: Pattern): string {
  return '$' + tokens.map((t) => (typeof t === 'number' ? `[${t}]` : t === '*' ? '[*]' : `.${t}`)).join('');
}
