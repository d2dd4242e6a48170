import { RuleStore } from '../store/rules';
import { Logger } from '../util/logger';
import { Answer } from './answer';
import { AnswerMetrics } from './answer-metrics';
import { evaluation, fairly, recordQuarantine } from './dragnet-handler';
import { holdForFreshness, holdForReferences, holdUntilLoaded } from './dragnet-holds';
import { reportDecision, reportFairness } from './dragnet-report';
import { Endpoint } from './endpoints';
import { NamespaceFairness } from './fairness';
import { failOpen, Handler, handlerOf, layered } from './handler';
import { WebhookMetrics } from './metrics';
import { handleMutateModRule } from './modrule';
import { podBindingHandler } from './podbinding';
import { handleDragnetProbe } from './probe';
import { RuleQuarantine } from './quarantine';
import { answerValidateModRule } from './rule-admission';
import { RuleFailures } from './rule-failures';
import { RuleUnenforced } from './rule-unenforced';
import type { WebhookServerOptions } from './server-options';

/** What the server keeps for its endpoints: the store, and the accounts, metrics and records it shares. */
export interface EndpointServices {
  store: RuleStore;
  logger: Logger;
  metrics: WebhookMetrics;
  answers: AnswerMetrics;
  fairness: NamespaceFairness;
  quarantine: RuleQuarantine;
  failures: RuleFailures;
  unenforced: RuleUnenforced;
}

/**
 * Each endpoint's handler with its wrappers, outermost first. The dragnet: held until the rules are loaded and the
 * objects they read are cached (else 503), our own failure answered open, held for rules admitted a moment ago, then
 * reported (what fairness did, the decision, the quarantine's offences) around its evaluation under fairness.
 */
export function endpointHandlers(
  options: WebhookServerOptions,
  services: EndpointServices,
): Record<Endpoint, Handler> {
  const { store, logger, metrics, answers, fairness, quarantine } = services;
  const failingOpen = failOpen(logger, answers);
  const evaluate = evaluation({
    store,
    quarantine,
    references: options.references,
    recordPatchedBy: options.recordPatchedBy,
  });
  const dragnet = layered<Answer>(
    layered(
      fairly(fairness, evaluate),
      reportFairness(fairness, metrics, logger, options.onDemotion),
      reportDecision(logger, metrics, answers, services),
      recordQuarantine(quarantine),
    ),
    // Rules admitted a moment ago before references: the objects they read are then among those waited for.
    holdUntilLoaded(options.rulesLoaded, logger, answers),
    holdForFreshness(options.storeFreshness),
    holdForReferences(options.references, store, logger, answers),
    failingOpen,
  );
  const validateModRule: Handler = (context) =>
    answerValidateModRule(context.request, context.url, {
      clusterNamespace: store.snapshot().clusterNamespace,
      servedKinds: options.servedKinds,
      allowSecrets: store.referencePolicy.allowSecrets,
      hook: options.ruleAdmission,
      logger,
    });
  return {
    dragnet,
    'validate-modrule': failingOpen(validateModRule),
    'mutate-modrule': failingOpen(handlerOf(handleMutateModRule)),
    podbinding: failingOpen(podBindingHandler(options.onPodBinding, logger)),
    'dragnet-probe': failingOpen(handlerOf(handleDragnetProbe)),
  };
}
