import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { BudgetExhaustedError, RequestBudget, RuleBudgetExhaustedError } from '../util/budget';
import { CompiledRule } from '../rule/compile';
import { AdmissionOperation } from '../rule/types';
import { RuleIndex } from '../store/rule-index';
import { SelectCache } from '../jsonpath/select-cache';
import { ruleMatches } from './match';
import {
  applyOperationsShared,
  Budget,
  MAX_OPERATIONS_PER_REQUEST,
  ResolvedOperation,
  resolveOperations,
  RuleRuntimeError,
} from './patch';
import { LastApplied } from './last-applied';
import { AdmissionOutcome, failAlone, QuarantineCheck, refOf } from './outcome';
import type { ReferenceViews } from './references';
import { AppliedWrite, findOverrides } from './overrides';
import { recordWouldPatch } from './unenforced';
import { messageOf } from '../util/errors';

/**
 * Runs Patch rules tier by tier (lowest first). Every rule of a tier is matched against the tier's input; the
 * matching ones then apply in namespace/name order, each computed against the object as the previous rules of the
 * tier left it (as KubeMod's CalculatePatch). A failing rule is recorded and its changes dropped.
 * Each rule runs within its own share of the budget, and a quarantined one is skipped (see AdmitOptions).
 * Only the index's candidates for the tier's input are visited. Returns the selects of the final object and, unless
 * the budget ran out, its candidates (the Reject rules are among them).
 * A Warn/DryRun rule's would-be patch is recorded (engine/unenforced.ts) and not applied: later rules do not see it,
 * as the object stored will not have it. When more than one rule patched, the writes a later rule undid are
 * recorded (engine/overrides.ts).
 */
export function runPatchRules(
  index: RuleIndex,
  operation: AdmissionOperation,
  input: SelectCache,
  namespace: string,
  lastApplied: LastApplied,
  outcome: AdmissionOutcome,
  quarantined?: QuarantineCheck,
  views?: ReferenceViews,
): { selects: SelectCache; candidates?: readonly CompiledRule[] } {
  const request = input.budget;
  const budget: Budget = { remaining: MAX_OPERATIONS_PER_REQUEST, request };
  let selects = input;
  let current = input.root as JsonObject;
  let work: TierWork | undefined;
  let rules: readonly CompiledRule[] = [];
  let i = 0;
  let writes: AppliedWrite[] | undefined;
  try {
    rules = index.candidates(selects);
    while (i < rules.length) {
      const tier = rules[i].tier;
      const tierInput = selects;
      work = new TierWork(current);
      for (; i < rules.length && rules[i].tier === tier; i++) {
        const rule = rules[i];
        if (rule.type !== 'Patch' || !rule.operations.has(operation)) continue;
        const quarantine = quarantined?.(rule);
        if (quarantine) {
          // Not even matched: its match section may be what is heavy.
          outcome.quarantined.push({ rule: refOf(rule), message: `skipped: ${quarantine}` });
          continue;
        }
        const ops = runRule(rule, tierInput, work, namespace, budget, outcome, views);
        if (ops !== undefined) {
          lastApplied.apply(ops);
          (writes ??= []).push({ rule, ops });
        }
      }
      current = work.current;
      work = undefined;
      if (current !== tierInput.root) {
        // Later tiers see the patched object: its own selects, its own candidates.
        selects = new SelectCache(current, request);
        rules = index.candidates(selects);
        i = firstAfterTier(rules, tier);
      }
    }
  } catch (err) {
    if (!(err instanceof BudgetExhaustedError)) throw err;
    // The request's budget ran out: this rule and every candidate after it fail as rules fail at run time
    // (reported, their changes dropped), so the request is answered at once. What applied before stays.
    if (work) current = work.current;
    for (const rule of rules.slice(i)) {
      if (rule.type !== 'Patch' || !rule.operations.has(operation)) continue;
      const quarantine = quarantined?.(rule);
      if (quarantine) outcome.quarantined.push({ rule: refOf(rule), message: `skipped: ${quarantine}` });
      else outcome.failures.push({ rule: refOf(rule), message: err.message });
    }
    return { selects: current === selects.root ? selects : new SelectCache(current, request) };
  }
  if (writes && writes.length > 1) findOverrides(writes, current, outcome);
  // On DELETE nothing is patched: nothing would be either.
  if (operation === 'DELETE' && outcome.unenforced.length > 0) outcome.unenforced = [];
  return { selects, candidates: rules };
}

/**
 * One Patch rule within its own share of the budget: matched against the tier's input and, when it matches,
 * applied. Its operations, or undefined when it did not match or failed; a rule that runs out of its share fails
 * alone (the request's budget running out is thrown on, see runPatchRules).
 */
function runRule(
  rule: CompiledRule,
  tierInput: SelectCache,
  work: TierWork,
  namespace: string,
  budget: Budget,
  outcome: AdmissionOutcome,
  views: ReferenceViews | undefined,
): ResolvedOperation[] | undefined {
  const request = budget.request;
  request?.beginRule();
  try {
    // A rule that reads other objects sees them (its own view); every other rule sees the tier's input itself.
    const input = views ? views.selectsFor(rule, tierInput) : tierInput;
    if (!ruleMatches(rule, input.root, input)) return undefined;
    request?.check();
    outcome.matched.push(refOf(rule));
    return applyRule(rule, work, namespace, budget, outcome, views);
  } catch (err) {
    if (!(err instanceof RuleBudgetExhaustedError)) throw err;
    failAlone(rule, err, outcome);
    return undefined;
  } finally {
    request?.endRule();
  }
}

/**
 * One matching Patch rule applied to the tier's object: its operations, or undefined when it failed or is not
 * enforced (Warn, DryRun: its would-be patch is recorded instead).
 */
function applyRule(
  rule: CompiledRule,
  work: TierWork,
  namespace: string,
  budget: Budget,
  outcome: AdmissionOutcome,
  views: ReferenceViews | undefined,
): ResolvedOperation[] | undefined {
  try {
    const target = views ? views.objectFor(rule, work.current) : work.current;
    const ops = resolveOperations(rule, target, namespace, budget);
    if (rule.enforcement !== 'Enforce') {
      recordWouldPatch(rule, ops, work.current, outcome, budget.request);
      return undefined;
    }
    work.apply(ops, budget.request);
    outcome.patched.push(refOf(rule));
    return ops;
  } catch (err) {
    if (err instanceof BudgetExhaustedError) throw err; // the request's, not this rule's: see runPatchRules
    outcome.failures.push({ rule: refOf(rule), message: messageOf(err) });
    return undefined;
  }
}

/**
 * The object the Patch rules of one tier build from the tier's input. Copy on write once per tier, not per rule:
 * containers copied by an earlier rule of the tier are written in place by the later ones. A rule that fails (or
 * runs out of budget) half-way may have written into them, so the object is rebuilt from the tier's input and the
 * operations of the rules that succeeded; after that each rule copies for itself again (one rebuild per tier at most).
 * The tier's input is never written: the tier's rules are matched against it.
 */
class TierWork {
  current: JsonObject;
  private readonly applied: ResolvedOperation[][] = [];
  private owned: Set<object> | null = new Set();

  constructor(private readonly input: JsonObject) {
    this.current = input;
  }

  /** Applies one rule's operations; when one fails, the object is left as it was before the rule and it rethrows. */
  apply(ops: readonly ResolvedOperation[], budget: RequestBudget | undefined): void {
    try {
      const next = applyOperationsShared(this.current, ops, this.owned ?? new Set(), budget);
      if (!isJsonObject(next)) throw new RuleRuntimeError('the patch replaced the object with a non-object');
      this.current = next;
      if (this.owned) this.applied.push(ops as ResolvedOperation[]);
    } catch (err) {
      if (this.owned) this.rebuild();
      throw err;
    }
  }

  private rebuild(): void {
    this.owned = null;
    const owned = new Set<object>();
    let doc: JsonValue = this.input;
    // Replays what already succeeded on the same input: it cannot fail, and its budget was charged the first time.
    for (const ops of this.applied) doc = applyOperationsShared(doc, ops, owned);
    this.current = doc as JsonObject;
  }
}

function firstAfterTier(rules: readonly CompiledRule[], tier: number): number {
  let i = 0;
  while (i < rules.length && rules[i].tier <= tier) i++;
  return i;
}
