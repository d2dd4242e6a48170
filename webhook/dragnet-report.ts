import { ruleName } from '../engine/rejection';
import { Logger } from '../util/logger';
import { AnswerMetrics } from './answer-metrics';
import { RequestContext } from './context';
import { DragnetAnswer } from './dragnet-handler';
import { DragnetDecision, rejectionLogFields } from './dragnet';
import { NamespaceFairness } from './fairness';
import { Wrapper } from './handler';
import { DragnetMetrics } from './metrics';
import { RuleFailures } from './rule-failures';
import { RuleUnenforced } from './rule-unenforced';
import type { NamespaceDemotion } from './server-options';

/*
 * What the dragnet tells about each request, wrapped around its evaluation: the decision (logs, per-rule metrics,
 * the rules' run-time failures), then what fairness did (an exhausted budget, a demotion).
 */

/** What the dragnet records of its decisions per rule, for the operator to show on the rules. */
export interface DecisionRecords {
  /** Run-time failures. */
  failures: RuleFailures;
  /** What Warn/DryRun rules would have done. */
  unenforced: RuleUnenforced;
}

/**
 * Logs and counts each decision: one line per patch, rejection or failure, the rules' run-time failures, what
 * Warn/DryRun rules would have done, and the rule pairs where a later rule undid an earlier one's write.
 */
export function reportDecision(
  logger: Logger,
  metrics: DragnetMetrics,
  answers: AnswerMetrics,
  records: DecisionRecords,
): Wrapper<DragnetAnswer> {
  return (next) => async (context) => {
    const answer = await next(context);
    if (answer.error) answers.failedOpen('dragnet', 'engine_error');
    logDecision(context, answer, logger, metrics, records);
    return answer;
  };
}

function logDecision(
  context: RequestContext,
  decision: DragnetDecision,
  logger: Logger,
  metrics: DragnetMetrics,
  { failures, unenforced }: DecisionRecords,
): void {
  const outcome = decision.outcome;
  if (decision.error) {
    logger.error('admission evaluation failed; allowed unchanged', {
      ...context.logFields,
      error: decision.error.message,
      stack: decision.error.stack,
    });
    return;
  }
  if (!outcome) return;
  const base = context.logFields;
  // One line however many rules failed: a request that ran out of budget can fail hundreds at once.
  if (outcome.failures.length > 0) {
    logger.warn('ModRules failed at run time and were skipped', {
      ...base,
      failures: outcome.failures.map((f) => ({ rule: ruleName(f.rule), error: f.message })),
    });
    failures.record(outcome.failures, () => context.label);
  }
  metrics.countRules(
    'error',
    outcome.failures.map((f) => f.rule),
  );
  if (outcome.unenforced.length > 0) {
    // Recorded like a patch or rejection: one line, the would-be patch itself at debug.
    logger.info('not enforced (Warn/DryRun): admitted as is', {
      ...base,
      rules: outcome.unenforced.map((u) => ({ rule: ruleName(u.rule), mode: u.action, would: u.effect })),
    });
    if (logger.isDebugEnabled() && !outcome.secretValues)
      for (const u of outcome.unenforced) logger.debug('would patch or reject', { ...base, ...u });
    metrics.countUnenforced(outcome.unenforced);
    unenforced.record(outcome.unenforced, () => context.label);
  }
  if (outcome.overridden.length > 0) {
    if (logger.isDebugEnabled())
      logger.debug('a later rule undid an earlier write', { ...base, overridden: outcome.overridden });
    metrics.countOverrides(outcome.overridden);
  }
  // One info line per admission that changed or rejected something, listing the rules; per-rule detail at debug.
  if (decision.result === 'rejected') {
    logger.info('rejected', { ...base, ...rejectionLogFields(outcome) });
    metrics.countRules(
      'rejection',
      outcome.rejections.map((r) => r.rule),
    );
  } else if (decision.result === 'patched') {
    logger.info('patch applied', { ...base, rules: decision.applied.map(ruleName) });
    if (logger.isDebugEnabled()) {
      for (const rule of decision.applied) logger.debug('patched', { ...base, rule });
      // A patch holding a value read from a Secret is not logged, even at debug.
      if (!outcome.secretValues) logger.debug('patch', { ...base, patch: outcome.patch });
    }
    metrics.countRules('patch', decision.applied);
  }
}

/** Reports what fairness did to each request: its budget ran out, its namespace was demoted. */
export function reportFairness(
  fairness: NamespaceFairness,
  metrics: DragnetMetrics,
  logger: Logger,
  onDemotion: ((demotion: NamespaceDemotion) => unknown) | undefined,
): Wrapper<DragnetAnswer> {
  return (next) => async (context) => {
    const answer = await next(context);
    const run = answer.fair;
    if (!run) return answer;
    const namespace = context.namespace ?? '';
    if (run.budget.exhausted) {
      metrics.budgetExhausted.inc({ namespace });
      logger.warn('request budget exhausted; remaining ModRules skipped', {
        ...context.logFields,
        reason: run.budget.exhausted,
        demoted: run.demoted,
      });
    }
    if (run.demotion) {
      metrics.demotions.inc({ namespace, reason: run.demotion });
      if (!run.demoted) {
        // Logged once per demotion (renewals while demoted are counted, not logged).
        logger.warn('namespace demoted: its requests now get a small budget and wait their turn', {
          namespace,
          reason: run.demotion,
          cpuMs: Math.round(run.cpuMs * 1000) / 1000,
          wallMs: Math.round(run.wallMs * 1000) / 1000,
          budget: fairness.demotedBudget,
        });
        if (onDemotion)
          notifyDemotion(onDemotion, { namespace, reason: run.demotion, rules: [] }, answer, logger);
      }
    }
    return answer;
  };
}

// The namespace's own ModRules that matched or failed in the request that demoted it, once each; not awaited.
function notifyDemotion(
  onDemotion: (demotion: NamespaceDemotion) => unknown,
  demotion: NamespaceDemotion,
  decision: DragnetDecision,
  logger: Logger,
): void {
  const outcome = decision.outcome;
  const seen = new Set<string>();
  for (const ref of [...(outcome?.matched ?? []), ...(outcome?.failures ?? []).map((f) => f.rule)]) {
    if (ref.namespace !== demotion.namespace || seen.has(ref.name)) continue;
    seen.add(ref.name);
    demotion.rules.push(ref);
  }
  Promise.resolve()
    .then(() => onDemotion(demotion))
    .catch((err: Error) =>
      logger.error('demotion handler failed', { namespace: demotion.namespace, error: err?.message }),
    );
}
