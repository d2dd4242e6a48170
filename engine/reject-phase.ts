import { JsonValue } from '../util/json';
import { BudgetExhaustedError, RequestBudget, RuleBudgetExhaustedError } from '../util/budget';
import { MAX_OBJECT_DEPTH } from '../util/depth';
import { CompiledRule } from '../rule/compile';
import { AdmissionOperation } from '../rule/types';
import { RuleIndex } from '../store/rule-index';
import { SelectCache } from '../jsonpath/select-cache';
import { ruleMatches } from './match';
import { AdmissionOutcome, QuarantineCheck, refOf } from './outcome';
import type { ReferenceViews } from './references';
import { recordWouldReject } from './unenforced';
import { messageOf } from '../util/errors';
import { templateData } from './pod-view';

/**
 * Reject rules of every tier see the final patched object (KubeMod's dragnet handler: patch first, then reject).
 * A Reject rule the budget (or its own share of it) cannot evaluate rejects (see rejectUnevaluated). A Warn/DryRun
 * rule that matches is recorded as a would-be rejection (engine/unenforced.ts) and rejects nothing.
 */
export function runRejectRules(
  index: RuleIndex,
  // The final object's candidates when the Patch phase already has them: the index is not read twice.
  candidates: readonly CompiledRule[] | undefined,
  operation: AdmissionOperation,
  selects: SelectCache,
  namespace: string,
  outcome: AdmissionOutcome,
  quarantined?: QuarantineCheck,
  views?: ReferenceViews,
): void {
  let rules: readonly CompiledRule[] = [];
  let i = 0;
  try {
    rules = (candidates ?? index.candidates(selects)).filter(
      (r) => r.type === 'Reject' && r.operations.has(operation),
    );
    for (; i < rules.length; i++) {
      const rule = rules[i];
      runRule(rule, views ? views.selectsFor(rule, selects) : selects, namespace, outcome, quarantined);
    }
  } catch (err) {
    if (!(err instanceof BudgetExhaustedError)) throw err;
    // rules[i] ran out of budget while matching or rendering its message: it and the rest reject.
    rejectUnevaluated(rules.slice(i), ` within the request budget (${err.message})`, outcome);
  }
}

/**
 * One Reject rule within its own share of the budget. A rule that runs out of its share rejects alone (fail
 * closed); a quarantined one is still matched (skipping it would let objects through) but its rejectMessage, often
 * what is heavy, is not rendered.
 */
function runRule(
  rule: CompiledRule,
  selects: SelectCache,
  namespace: string,
  outcome: AdmissionOutcome,
  quarantined: QuarantineCheck | undefined,
): void {
  const object = selects.root;
  const budget = selects.budget;
  budget?.beginRule();
  try {
    if (!ruleMatches(rule, object, selects)) return;
    budget?.check();
    outcome.matched.push(refOf(rule));
    const quarantine = quarantined?.(rule);
    if (quarantine) {
      outcome.quarantined.push({ rule: refOf(rule), message: `rejectMessage not rendered: ${quarantine}` });
      reject(rule, '', outcome);
      return;
    }
    reject(rule, rejectMessage(rule, object, namespace, budget, outcome), outcome);
  } catch (err) {
    if (!(err instanceof RuleBudgetExhaustedError)) throw err;
    rejectUnevaluated([rule], ` within its share of the request budget (${err.message})`, outcome);
    outcome.overBudget.push(refOf(rule));
  } finally {
    budget?.endRule();
  }
}

/** A matching rule rejects, or records that it would (Warn, DryRun). */
function reject(rule: CompiledRule, message: string, outcome: AdmissionOutcome): void {
  if (rule.enforcement === 'Enforce') outcome.rejections.push({ rule: refOf(rule), message });
  else recordWouldReject(rule, message, outcome);
}

/** The rule's rendered rejectMessage; '' when it has none or it fails (KubeMod's denial then names just the rule). */
function rejectMessage(
  rule: CompiledRule,
  object: JsonValue,
  namespace: string,
  budget: RequestBudget | undefined,
  outcome: AdmissionOutcome,
): string {
  if (!rule.rejectMessage) return '';
  try {
    return rule.rejectMessage.render(templateData(rule, object, namespace), budget);
  } catch (err) {
    if (err instanceof BudgetExhaustedError) throw err;
    // A broken message must not turn a rejection into an admission.
    outcome.failures.push({ rule: refOf(rule), message: `rejectMessage: ${messageOf(err)}` });
    return '';
  }
}

/**
 * Reject rules that could not be evaluated reject (fail closed), as a rule whose rejectMessage fails still rejects:
 * otherwise exhausting the budget, or nesting the object deeply, would be a way around every policy. Each is also
 * reported as a failure (warned, counted). A Warn/DryRun rule rejects nothing: it only fails.
 */
function rejectUnevaluated(rules: readonly CompiledRule[], why: string, outcome: AdmissionOutcome): void {
  const message = `could not be evaluated${why}`;
  for (const rule of rules) {
    outcome.failures.push({ rule: refOf(rule), message });
    if (rule.enforcement === 'Enforce') outcome.rejections.push({ rule: refOf(rule), message });
  }
}

/**
 * An object nesting deeper than MAX_OBJECT_DEPTH is refused up front with a clear reason, rather than a stack
 * overflow somewhere in a rule: Patch rules fail, Reject rules fail closed (deep nesting must not get around them).
 */
export function refuseDeep(rules: readonly CompiledRule[], outcome: AdmissionOutcome): void {
  const message = `object nests deeper than ${MAX_OBJECT_DEPTH} levels; ModRules are not evaluated against it`;
  for (const rule of rules) if (rule.type === 'Patch') outcome.failures.push({ rule: refOf(rule), message });
  const rejects = rules.filter((r) => r.type === 'Reject');
  rejectUnevaluated(rejects, `: object nests deeper than ${MAX_OBJECT_DEPTH} levels`, outcome);
  outcome.allowed = outcome.rejections.length === 0;
}
