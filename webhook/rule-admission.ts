import type { ClusterScoped } from '../rule/kinds';
import { AdmissionRequest } from './admission';
import { Logger } from '../util/logger';
import { nameOf } from '../util/meta';
import { holdBudgetMs } from './hold';
import { EndpointDecision } from './answer';
import { handleValidateModRule, ServedKinds } from './modrule';
import { denyResponse } from './review';

/*
 * The seams through which the operator makes a ModRule in force when the write that creates or changes it returns
 * (the webhook server has no Kubernetes client): the validating endpoint hands every valid rule it admits to a hook
 * that may widen the dragnet registration first, and dragnet requests wait for the store to have the rules admitted
 * a moment ago that could reach them.
 */

/** What the operator adds to the admission of a valid ModRule: warnings, or a refusal. */
export interface RuleAdmissionOutcome {
  warnings?: string[];
  /** The rule cannot be put in force now: refuse its write, with this status. */
  refuse?: { code: number; reason: string; message: string };
}

/**
 * Called for every valid ModRule CREATE and UPDATE (dry runs included: the hook decides), with the time left before
 * the API server's timeout (less a margin); resolves within it.
 */
export type RuleAdmissionHook = (
  request: AdmissionRequest,
  budgetMs: number,
) => Promise<RuleAdmissionOutcome>;

/** Rules admitted a moment ago that the store has not seen yet. */
export interface StoreFreshness {
  /**
   * Null when no such rule could reach objects of `namespace` ('' for cluster-scoped objects); else a promise that
   * resolves once the store has them, or after at most `budgetMs`.
   */
  until(namespace: string, budgetMs: number): Promise<void> | null;
}

/** The validating endpoint: validation, then the operator's hook for a valid CREATE or UPDATE. */
export async function answerValidateModRule(
  request: AdmissionRequest,
  url: string | undefined,
  options: {
    clusterNamespace: string;
    servedKinds?: ServedKinds;
    /** Whether rules may read Secrets (spec.references). */
    allowSecrets?: boolean;
    /** Which kinds are cluster-scoped (the operator's discovery); default the offline list. */
    clusterScoped?: ClusterScoped;
    hook?: RuleAdmissionHook;
    logger: Logger;
  },
): Promise<EndpointDecision> {
  const decision = handleValidateModRule(
    request,
    options.clusterNamespace,
    options.servedKinds,
    options.allowSecrets,
    options.clusterScoped,
  );
  if (decision.result === 'rejected') {
    options.logger.info('invalid ModRule rejected', {
      object: {
        kind: 'ModRule',
        namespace: request.namespace ?? '',
        name: nameOf(request.object) || request.name,
      },
      operation: request.operation,
      uid: request.uid,
      problems: decision.response.status?.message,
    });
    return decision;
  }
  if (!options.hook || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return decision;
  const outcome = await options.hook(request, holdBudgetMs(url));
  if (outcome.refuse) {
    const { code, reason, message } = outcome.refuse;
    return { response: denyResponse(request.uid, code, reason, message), result: 'rejected' };
  }
  if (outcome.warnings?.length)
    decision.response.warnings = [...(decision.response.warnings ?? []), ...outcome.warnings];
  return decision;
}
