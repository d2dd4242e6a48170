import { JsonObject } from '../util/json';
import { REJECT_RESERVE, RequestBudget, UNTIMED_BUDGET } from '../util/budget';
import { deeperThan } from '../util/depth';
import { createPatch } from '../patch/diff';
import { RuleSnapshot } from '../store/rules';
import { RuleIndex } from '../store/rule-index';
import { SelectCache } from '../jsonpath/select-cache';
import { LastApplied } from './last-applied';
import { AdmissionInput, AdmissionOutcome, QuarantineCheck, withholdSecretMessages } from './outcome';
import { NO_REFERENCES, ReferenceReader, ReferenceViews } from './references';
import { runPatchRules } from './patch-phase';
import { recordedRules, withPatchRecord } from './record';
import { refuseDeep, runRejectRules } from './reject-phase';
import { finish, isIgnored, prepare, scopeOf } from './subject';

// admit() is the engine's entry point: its input and outcome types are importable from here.
export type { AdmissionInput, AdmissionOutcome, QuarantineCheck, RuleRef } from './outcome';

/** What the webhook adds to a request's evaluation. */
export interface AdmitOptions {
  /** Rules set aside for now (see QuarantineCheck); omitted: none. */
  quarantined?: QuarantineCheck;
  /** Keep the record of the rules that patched the object (engine/record.ts) on it; default off, as KubeMod. */
  recordPatchedBy?: boolean;
  /** Where the objects rules reference are looked up; omitted: every reference is absent. */
  references?: ReferenceReader;
  /**
   * false: keep the messages of rules that may read a Secret (offline tools, the user's own files). Default: they
   * are withheld, since the webhook logs them and sends them as warnings.
   */
  withholdSecrets?: boolean;
}

/**
 * Runs the rules of the snapshot against one admission request. Pure: no I/O, no logging. Once `budget` (default
 * UNTIMED_BUDGET; the webhook passes its own) runs out, the rules left fail (Patch) or reject (Reject); a rule that
 * runs out of its own share of it fails (or rejects) alone.
 */
export function admit(
  input: AdmissionInput,
  snapshot: RuleSnapshot,
  budget: RequestBudget = new RequestBudget(UNTIMED_BUDGET),
  options: AdmitOptions = {},
): AdmissionOutcome {
  const outcome: AdmissionOutcome = {
    allowed: true,
    rejections: [],
    patch: [],
    object: input.object,
    matched: [],
    patched: [],
    failures: [],
    ignored: false,
    overBudget: [],
    quarantined: [],
    unenforced: [],
    overridden: [],
  };
  const operation = input.operation;
  // On DELETE the API server sends only the old object; Reject rules are matched against it.
  const subject = operation === 'DELETE' ? input.oldObject : input.object;
  if (!subject) return outcome;

  const namespace = scopeOf(input.namespace, subject);
  if (isIgnored(namespace, subject, snapshot)) {
    outcome.ignored = true;
    return outcome;
  }
  const index = RuleIndex.of(snapshot.rulesFor(namespace));
  if (!index.operations.has(operation)) return outcome;
  if (deeperThan(subject)) {
    refuseDeep(
      index.rules.filter((r) => r.operations.has(operation)),
      outcome,
    );
    return outcome;
  }

  const namespaceText = namespace ?? '';
  const views = index.readsReferences
    ? new ReferenceViews(options.references ?? NO_REFERENCES, namespaceText)
    : undefined;
  const working = prepare(subject, namespace, snapshot);
  let current = working.object;

  // Patch rules run on DELETE too, as in KubeMod (CalculatePatch runs for every operation): Reject rules then see
  // the patched old object. The API server has no object to patch on DELETE, so no patch is returned there.
  const lastApplied = new LastApplied(subject);
  // The rules' time starts here: reading and preparing the object (bounded by its size) is nobody's rule.
  budget.restart();
  // Patch rules (a tenant's own among them) cannot spend what the Reject rules (the cluster's among them) need.
  const reserved = index.rejectOperations.has(operation);
  if (reserved) budget.reserve(REJECT_RESERVE);
  const { selects, candidates } = runPatchRules(
    index,
    operation,
    new SelectCache(current, budget),
    namespaceText,
    lastApplied,
    outcome,
    options.quarantined,
    views,
  );
  const patched = selects.root as JsonObject;
  let final: JsonObject | null = null;
  if (patched !== current) {
    current = patched;
    if (operation !== 'DELETE') {
      final = finish(current, working);
      lastApplied.writeTo(final);
    }
  }
  // The record goes on the object the API server stores, not into last-applied: kubectl apply must not own it.
  if (options.recordPatchedBy && operation !== 'DELETE') {
    const base = final ?? (input.object as JsonObject);
    const recorded = withPatchRecord(base, recordedRules(base, outcome.patched, index.rules));
    if (recorded !== base) final = recorded;
  }
  if (final) {
    outcome.object = final;
    outcome.patch = createPatch(input.object as JsonObject, final);
  }

  if (reserved) {
    budget.release();
    runRejectRules(index, candidates, operation, selects, namespaceText, outcome, options.quarantined, views);
  }
  if (index.readsSecrets.size > 0 && options.withholdSecrets !== false)
    withholdSecretMessages(outcome, index.readsSecrets);
  if (outcome.rejections.length > 0) {
    outcome.allowed = false;
    outcome.patch = [];
  }
  return outcome;
}
