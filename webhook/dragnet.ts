import { AdmissionRequest, AdmissionResponse } from './admission';
import { admit, AdmissionOutcome, AdmitOptions, RuleRef } from '../engine/admit';
import { ruleName, rejectionMessage } from '../engine/rejection';
import { JsonObject } from '../util/json';
import { RequestBudget } from '../util/budget';
import { RuleSnapshot } from '../store/rules';
import { unenforcedSummary } from '../engine/unenforced';
import { AdmissionResult, failOpenResponse, MAX_WARNING_CHARS, truncate } from './answer';
import { allowResponse, BadRequestError, denyResponse, patchResponse, subjectObject } from './review';

/** What the dragnet endpoint decided, with what the server needs to log and count. */
export interface DragnetDecision {
  response: AdmissionResponse;
  result: AdmissionResult;
  /** null when nothing was evaluated (subresource) or the engine threw. */
  outcome: AdmissionOutcome | null;
  /** Patch rules that matched and ran without failing. */
  applied: RuleRef[];
  /** Why the request was let through without evaluation, if it was. */
  skipped?: string;
  /** The engine's own failure, answered fail-open. */
  error?: Error;
}

const MAX_WARNINGS = 10;

/** The namespace the store is asked about: Namespace objects are cluster-scoped even when the request names one. */
export function storeNamespace(request: AdmissionRequest, object: JsonObject | null): string | null {
  const kind = request.kind ?? {
    group: '',
    version: '',
    kind: typeof object?.kind === 'string' ? object.kind : '',
  };
  if (kind.group === '' && kind.kind === 'Namespace') return null;
  return request.namespace ? request.namespace : null;
}

/** What the one log line of a rejected admission says: every rejecting rule, with its message. */
export function rejectionLogFields(outcome: AdmissionOutcome): {
  rules: string[];
  rejections: Array<{ rule: RuleRef; rejectMessage: string }>;
} {
  return {
    rules: outcome.rejections.map((r) => ruleName(r.rule)),
    rejections: outcome.rejections.map((r) => ({ rule: r.rule, rejectMessage: r.message })),
  };
}

// What Warn rules would have done ("modrule ns/name (Warn) would patch: add /x"; DryRun rules say nothing to the
// writer), failed rules, then quarantined ones ("modrule ns/name skipped: quarantined ..."), at most MAX_WARNINGS.
function warningsOf(outcome: AdmissionOutcome): string[] {
  const all = [
    ...outcome.unenforced
      .filter((u) => u.action === 'Warn')
      .map((u) => `modrule ${ruleName(u.rule)} (Warn) ${unenforcedSummary(u)}`),
    ...outcome.failures.map((f) => `modrule ${ruleName(f.rule)} failed: ${f.message}`),
    ...outcome.quarantined.map((q) => `modrule ${ruleName(q.rule)} ${q.message}`),
  ];
  const out = all.slice(0, MAX_WARNINGS).map((w) => truncate(w, MAX_WARNING_CHARS));
  if (all.length > MAX_WARNINGS) out.push(`... and ${all.length - MAX_WARNINGS} more ModRule warnings`);
  return out;
}

/**
 * Answers one /dragnet-webhook request against one snapshot: pure apart from reading the snapshot.
 * Engine failures answer allowed (KubeMod fails open: a broken rule must not block every deployment).
 * `budget` bounds the evaluation of all rules together (default: admit's, UNTIMED_BUDGET); `options` says which
 * rules are quarantined; `namespace` is the store namespace when the caller has it already.
 */
export function handleDragnet(
  request: AdmissionRequest,
  snapshot: RuleSnapshot,
  budget?: RequestBudget,
  options?: AdmitOptions,
  namespace: string | null = storeNamespace(request, subjectObject(request)),
): DragnetDecision {
  const uid = request.uid;
  if (request.subResource) {
    // Status, scale and other subresource writes are not the manifests ModRules are written against.
    return {
      response: allowResponse(uid),
      result: 'allowed',
      outcome: null,
      applied: [],
      skipped: 'subresource',
    };
  }
  const operation = request.operation;
  const object = request.object ?? null;
  const oldObject = request.oldObject ?? null;
  if ((operation === 'CREATE' || operation === 'UPDATE') && object === null) {
    throw new BadRequestError(`request.object is required for ${operation}`);
  }

  let outcome: AdmissionOutcome;
  try {
    outcome = admit({ operation, object, oldObject, namespace }, snapshot, budget, options);
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    return {
      response: failOpenResponse(uid, error),
      result: 'error',
      outcome: null,
      applied: [],
      error,
    };
  }

  if (outcome.ignored) {
    return {
      response: allowResponse(uid),
      result: 'allowed',
      outcome,
      applied: [],
      skipped: 'ignored namespace',
    };
  }

  const warnings = warningsOf(outcome);
  let response: AdmissionResponse;
  let result: AdmissionResult;
  let applied: RuleRef[] = [];
  if (!outcome.allowed) {
    response = denyResponse(uid, 403, 'Forbidden', rejectionMessage(outcome.rejections));
    response.auditAnnotations = { rejected: outcome.rejections.map((r) => ruleName(r.rule)).join(',') };
    result = 'rejected';
  } else {
    const patch = operation === 'DELETE' ? [] : outcome.patch;
    response = patchResponse(uid, patch);
    result = patch.length > 0 ? 'patched' : 'allowed';
    if (patch.length > 0) {
      applied = outcome.patched;
      if (applied.length > 0) response.auditAnnotations = { applied: applied.map(ruleName).join(',') };
    }
  }
  if (warnings.length > 0) response.warnings = warnings;
  // The API server's audit log names the Warn/DryRun rules that would have acted, as it names the rules that applied.
  if (outcome.unenforced.length > 0)
    response.auditAnnotations = {
      ...response.auditAnnotations,
      unenforced: outcome.unenforced.map((u) => `${ruleName(u.rule)}:${u.action}:${u.effect}`).join(','),
    };
  return { response, result, outcome, applied };
}
