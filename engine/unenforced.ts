import { isJsonObject, JsonObject } from '../util/json';
import type { RequestBudget } from '../util/budget';
import { createPatch } from '../patch/diff';
import type { JsonPatchOperation } from '../patch/operation';
import type { CompiledRule } from '../rule/compile';
import { applyOperationsShared, ResolvedOperation, RuleRuntimeError } from './patch';
import { AdmissionOutcome, refOf, UnenforcedOutcome } from './outcome';

/*
 * Warn and DryRun rules (spec.enforcementAction) run as Enforce rules do, and what they would have done is recorded
 * on the outcome instead of being done: the object the API server stores is not patched and not rejected. Later
 * rules (of the tier and of later tiers) see the object without their would-be patch, as the stored object is.
 */

const SYNTHETIC_REFS = '/syntheticRefs';

/**
 * Records what a Warn/DryRun Patch rule would change on `current` (the tier's object so far, never written). A rule
 * that would change nothing (the object already has its values) records nothing. Throws as applying would.
 */
export function recordWouldPatch(
  rule: CompiledRule,
  ops: readonly ResolvedOperation[],
  current: JsonObject,
  outcome: AdmissionOutcome,
  budget: RequestBudget | undefined,
): void {
  // A fresh set of owned containers: every write copies, `current` stays as it is.
  const next = applyOperationsShared(current, ops, new Set(), budget);
  if (!isJsonObject(next)) throw new RuleRuntimeError('the patch replaced the object with a non-object');
  const patch = createPatch(current, next).filter(
    (o) => o.path !== SYNTHETIC_REFS && !o.path.startsWith(`${SYNTHETIC_REFS}/`),
  );
  if (patch.length === 0) return;
  outcome.unenforced.push({ rule: refOf(rule), action: actionOf(rule), effect: 'patch', patch, message: '' });
}

/** Records that a Warn/DryRun Reject rule would have rejected, with its rendered message ('' when none). */
export function recordWouldReject(rule: CompiledRule, message: string, outcome: AdmissionOutcome): void {
  outcome.unenforced.push({
    rule: refOf(rule),
    action: actionOf(rule),
    effect: 'reject',
    patch: [],
    message,
  });
}

function actionOf(rule: CompiledRule): UnenforcedOutcome['action'] {
  return rule.enforcement === 'Warn' ? 'Warn' : 'DryRun';
}

/** How many operations a summary names before "and N more". */
const LISTED_OPERATIONS = 5;

/** "add /metadata/labels/team, replace /spec/replicas, 3 more": paths only, never values. */
export function patchSummary(patch: readonly JsonPatchOperation[]): string {
  const listed = patch.slice(0, LISTED_OPERATIONS).map((o) => `${o.op} ${o.path}`);
  if (patch.length > listed.length) listed.push(`${patch.length - listed.length} more`);
  return listed.join(', ');
}

/**
 * One line on what a Warn/DryRun rule would have done: `would patch: add /x, remove /y` or
 * `would reject: <message>`. Paths only, never values (they may come from a Secret).
 */
export function unenforcedSummary(u: UnenforcedOutcome): string {
  if (u.effect === 'patch') return `would patch: ${patchSummary(u.patch)}`;
  return u.message ? `would reject: ${u.message}` : 'would reject the object';
}
