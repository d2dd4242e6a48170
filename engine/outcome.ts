import { JsonObject } from '../util/json';
import { CompiledRule } from '../rule/compile';
import { AdmissionOperation } from '../rule/types';
import { JsonPatchOperation } from '../patch/operation';

/** What the engine needs from an admission request. */
export interface AdmissionInput {
  operation: AdmissionOperation;
  object: JsonObject | null;
  oldObject: JsonObject | null;
  /** null or '' = cluster-scoped. */
  namespace: string | null;
}

/** A ModRule's identity. */
export interface RuleRef {
  namespace: string;
  name: string;
}

/** The engine's verdict; the caller turns it into an AdmissionResponse and logs it. */
export interface AdmissionOutcome {
  allowed: boolean;
  /** message is the rendered rejectMessage, '' when the rule has none (or it failed to render). */
  rejections: Array<{ rule: RuleRef; message: string }>;
  /** Original object -> final object; [] when nothing changed. Always [] for DELETE (Patch rules only feed Rejects). */
  patch: JsonPatchOperation[];
  /** Final object, without syntheticRefs. */
  object: JsonObject | null;
  /** Rules whose match section matched. */
  matched: RuleRef[];
  /** The Patch rules among them whose changes were applied (matched and did not fail). */
  patched: RuleRef[];
  /** Rules that failed at run time; their changes were dropped as a whole. */
  failures: Array<{ rule: RuleRef; message: string }>;
  /** The namespace (or Namespace object) is labelled admission.kubemod.io/ignore=true: nothing evaluated. */
  ignored: boolean;
  /** Rules that ran out of their own share of the request budget (each is in failures too). */
  overBudget: RuleRef[];
  /**
   * Quarantined rules this request would have run: a Patch rule is skipped ("skipped: why"), a Reject rule that
   * matches still rejects, without rendering its rejectMessage ("rejectMessage not rendered: why").
   */
  quarantined: Array<{ rule: RuleRef; message: string }>;
  /** Some rule that may read a Secret patched or rejected: the patch and messages may hold its values. */
  secretValues?: boolean;
  /**
   * Warn and DryRun rules that would have patched (a non-empty patch) or rejected the object: nothing of theirs is
   * in `patch`, `rejections` or `patched` (engine/unenforced.ts).
   */
  unenforced: UnenforcedOutcome[];
  /** Writes of a Patch rule that a later rule of the same request undid (engine/overrides.ts). */
  overridden: Override[];
}

/** What a Warn or DryRun rule would have done to the object. */
export interface UnenforcedOutcome {
  rule: RuleRef;
  action: 'Warn' | 'DryRun';
  effect: 'patch' | 'reject';
  /** The would-be patch from the object as the earlier rules left it; [] for a rejection. */
  patch: JsonPatchOperation[];
  /** The rendered rejectMessage ('' when none, or for a patch). */
  message: string;
}

/** A Patch rule's write that a later rule of the same request changed again. */
export interface Override {
  /** The rule whose write was undone. */
  rule: RuleRef;
  /** The later rule that undid it. */
  by: RuleRef;
  /** The path the earlier rule wrote (JSON Pointer). */
  path: string;
}

/**
 * Asked for every candidate rule when the caller quarantines rules (the webhook does, see webhook/quarantine.ts):
 * why the rule is quarantined, or null when it runs.
 */
export type QuarantineCheck = (rule: CompiledRule) => string | null;

/** Records a rule that ran out of its own share of the budget: it fails, the others go on. */
export function failAlone(rule: CompiledRule, err: Error, outcome: AdmissionOutcome): void {
  outcome.failures.push({ rule: refOf(rule), message: err.message });
  outcome.overBudget.push(refOf(rule));
}

/** The rule's identity as outcomes report it. */
export function refOf(rule: CompiledRule): RuleRef {
  return { namespace: rule.namespace, name: rule.name };
}

/** What replaces the messages of rules that may read a Secret (a value from it must not reach a log or warning). */
export const WITHHELD = 'message withheld: this ModRule reads a Secret';

/**
 * Replaces the failure and rejection messages of the rules in `secret` (by namespace/name) with WITHHELD, and marks
 * the outcome when one of them patched or rejected, so callers leave its patch out of logs.
 */
export function withholdSecretMessages(outcome: AdmissionOutcome, secret: ReadonlySet<string>): void {
  const hit = (r: RuleRef) => secret.has(`${r.namespace}/${r.name}`);
  for (const f of outcome.failures) if (hit(f.rule)) f.message = WITHHELD;
  for (const r of outcome.rejections) if (hit(r.rule) && r.message !== '') r.message = WITHHELD;
  for (const u of outcome.unenforced) if (hit(u.rule) && u.message !== '') u.message = WITHHELD;
  if (
    outcome.patched.some(hit) ||
    outcome.rejections.some((r) => hit(r.rule)) ||
    outcome.unenforced.some((u) => hit(u.rule))
  )
    outcome.secretValues = true;
}
