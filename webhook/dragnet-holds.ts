import { Logger } from '../util/logger';
import type { ReferenceSource } from '../store/references';
import { RuleStore } from '../store/rules';
import { unavailable } from './answer';
import { AnswerMetrics } from './answer-metrics';
import { Wrapper } from './handler';
import { within } from './hold';
import { referencesPending } from './references';
import { StoreFreshness } from './rule-admission';

/*
 * The holds of a dragnet request: never an answer from rules that are not all there yet. A request waits, up to the
 * API server's timeout less a second in all (the holds share that budget, RequestContext.holdMs), for what it
 * needs: the first full rule sync and the referenced objects then answer HTTP 503 so the webhook's failurePolicy
 * decides; the rules admitted a moment ago are waited for, then the request is answered with what the store has.
 */

const unwrapped: Wrapper = (next) => next;

/** Holds requests until `rulesLoaded` (the store's first full sync) resolves; none when omitted. */
export function holdUntilLoaded(
  rulesLoaded: Promise<void> | undefined,
  logger: Logger,
  answers: AnswerMetrics,
): Wrapper {
  if (!rulesLoaded) return unwrapped;
  let loaded = false;
  void rulesLoaded.then(() => (loaded = true));
  return (next) => async (context) => {
    if (loaded || (await within(rulesLoaded, context.holdMs))) return next(context);
    logger.warn('rules not loaded yet; left to the webhook failurePolicy', { ...context.logFields });
    answers.failedOpen(context.endpoint, 'rules_not_loaded');
    return unavailable('modrule: rules not loaded yet');
  };
}

/** Holds a request until the reference caches have the objects its rules read for its object. */
export function holdForReferences(
  references: ReferenceSource | undefined,
  store: RuleStore,
  logger: Logger,
  answers: AnswerMetrics,
): Wrapper {
  if (!references) return unwrapped;
  return (next) => async (context) => {
    const pending = referencesPending(references, store.snapshot(), context.request, context.namespace);
    if (!pending || (await within(pending, context.holdMs))) return next(context);
    logger.warn('objects the rules read are not in the caches yet; left to the webhook failurePolicy', {
      ...context.logFields,
    });
    answers.failedOpen(context.endpoint, 'references_not_synced');
    return unavailable('modrule: references not synced yet');
  };
}

/** Holds a request, bounded, until the store has the rules admitted a moment ago that could reach it. */
export function holdForFreshness(freshness: StoreFreshness | undefined): Wrapper {
  if (!freshness) return unwrapped;
  return (next) => async (context) => {
    const fresh = freshness.until(context.namespace ?? '', context.holdMs);
    if (fresh) await fresh;
    return next(context);
  };
}
