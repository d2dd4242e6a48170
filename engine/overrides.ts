import { jsonEqual, JsonObject } from '../util/json';
import { formatPointer, valueAt } from '../patch/pointer';
import type { CompiledRule } from '../rule/compile';
import type { ResolvedOperation } from './patch';
import { AdmissionOutcome, refOf } from './outcome';

/*
 * Run-time conflicts: a later rule of the same request undid what an earlier rule wrote (two rules setting one
 * label to different values, one removing what another adds). Looked for only when more than one rule patched, and
 * only on the paths the rules wrote: the cost is a pointer lookup per written path.
 */

/** The operations one Patch rule applied in a request, in the order rules applied. */
export interface AppliedWrite {
  readonly rule: CompiledRule;
  readonly ops: readonly ResolvedOperation[];
}

/**
 * Adds to `outcome.overridden` each earlier rule's write that the final object no longer holds, with the last later
 * rule that wrote the same path, a path above it or one below it. Inserts into lists (`add` at an index or `-`)
 * are left out: a later insert moves them without undoing them; so are operations the rule itself writes over with a
 * later operation of its own.
 */
export function findOverrides(
  writes: readonly AppliedWrite[],
  final: JsonObject,
  outcome: AdmissionOutcome,
): void {
  for (let i = 0; i < writes.length - 1; i++) {
    const ops = writes[i].ops;
    for (let k = 0; k < ops.length; k++) {
      const op = ops[k];
      if ((op.op === 'add' && isListInsert(op.tokens)) || rewrittenLater(ops, k)) continue;
      const now = valueAt(final, op.tokens);
      const kept = op.op === 'remove' ? now === undefined : now !== undefined && jsonEqual(now, op.value!);
      if (kept) continue;
      const by = lastWriterAfter(writes, i, op.tokens);
      if (by === undefined || by.rule.key === writes[i].rule.key) continue;
      outcome.overridden.push({
        rule: refOf(writes[i].rule),
        by: refOf(by.rule),
        path: formatPointer(op.tokens),
      });
    }
  }
}

function rewrittenLater(ops: readonly ResolvedOperation[], k: number): boolean {
  for (let j = k + 1; j < ops.length; j++) if (onOnePath(ops[j].tokens, ops[k].tokens)) return true;
  return false;
}

/** An add at `-` or at a list index (digits, or KubeMod's -1): an insert. Without a regex: it runs per write. */
function isListInsert(tokens: readonly string[]): boolean {
  const last = tokens[tokens.length - 1] ?? '';
  if (last === '-' || last === '-1') return true;
  if (last.length === 0) return false;
  for (let i = 0; i < last.length; i++) {
    const c = last.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The last rule after `i` with an operation on the path, above it or below it. */
function lastWriterAfter(
  writes: readonly AppliedWrite[],
  i: number,
  tokens: readonly string[],
): AppliedWrite | undefined {
  for (let j = writes.length - 1; j > i; j--)
    if (writes[j].ops.some((o) => onOnePath(o.tokens, tokens))) return writes[j];
  return undefined;
}

/** One path is the other or lies under it. */
function onOnePath(a: readonly string[], b: readonly string[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let k = 0; k < n; k++) if (a[k] !== b[k]) return false;
  return true;
}
