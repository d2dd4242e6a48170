import { DEFAULT_BUDGET } from '../util/budget';
import { Answer } from './answer';
import { evaluation, fairly, recordQuarantine } from './dragnet-handler';
import { holdForFreshness, holdForReferences, holdUntilLoaded } from './dragnet-holds';
import { reportDecision, reportFairness } from './dragnet-report';
import { WEBHOOK_PATHS } from './endpoints';
import { NamespaceFairness } from './fairness';
import { failClosed, failOpen, Handler, handlerOf, layered } from './handler';
import { DragnetMetrics } from './metrics';
import { handleMutateModRule } from './modrule';
import { podBindingHandler } from './podbinding';
import { handleDragnetProbe } from './probe';
import { RuleQuarantine, watchQuarantine } from './quarantine';
import { RuleFailures } from './rule-failures';
import { RuleUnenforced } from './rule-unenforced';
import { answerValidateModRule } from './rule-admission';
import type {
  DragnetOptions,
  EndpointOptions,
  EndpointRegistration,
  RuleEndpointOptions,
  ServerServices,
} from './server-options';

/*
 * The endpoints the webhook server registers (webhook/server.ts), each a handler with its wrappers, outermost first,
 * built with what the server shares (logger, registry, answer metrics).
 */

/**
 * The dragnet: held until the rules are loaded and the objects they read are cached (else 503), our own failure
 * answered open, held for rules admitted a moment ago, then reported (what fairness did, the decision, the
 * quarantine's offences) around its evaluation under fairness.
 */
export function dragnetEndpoint(options: DragnetOptions): EndpointRegistration {
  const { store } = options;
  // What the caller does not keep, the endpoint keeps, and releases when the server closes.
  const quarantine = options.quarantine ?? new RuleQuarantine({}, store);
  const failures = options.failures ?? new RuleFailures({}, store);
  const unenforced = options.unenforced ?? new RuleUnenforced({}, store);
  let close = (): void => {
    if (!options.quarantine) quarantine.close();
    if (!options.failures) failures.close();
    if (!options.unenforced) unenforced.close();
  };
  return {
    endpoint: 'dragnet',
    handler: ({ logger, registry, answers }: ServerServices): Handler => {
      const fairness = new NamespaceFairness({
        ...options.fairness,
        budget: options.budget ?? DEFAULT_BUDGET,
      });
      const metrics = new DragnetMetrics(registry, store, () => fairness.demotedCount());
      const unwatch = watchQuarantine(quarantine, registry, logger);
      const owned = close;
      close = () => {
        metrics.close();
        unwatch();
        owned();
      };
      const evaluate = evaluation({
        store,
        quarantine,
        references: options.references,
        recordPatchedBy: options.recordPatchedBy,
      });
      return layered<Answer>(
        layered(
          fairly(fairness, evaluate),
          reportFairness(fairness, metrics, logger, options.onDemotion),
          reportDecision(logger, metrics, answers, { failures, unenforced }),
          recordQuarantine(quarantine),
        ),
        // Rules admitted a moment ago before references: the objects they read are then among those waited for.
        holdUntilLoaded(options.rulesLoaded, logger, answers),
        holdForFreshness(options.storeFreshness),
        holdForReferences(options.references, store, logger, answers),
        failOpen(logger, answers),
      );
    },
    close: () => close(),
  };
}

/**
 * The ModRule validation and defaulting endpoints (the same checks as the store), in the store's namespace. They fail
 * closed, as their webhooks do: an internal error refuses the write.
 */
export function modRuleEndpoints(
  options: Pick<DragnetOptions, 'store'> & Pick<RuleEndpointOptions, 'servedKinds' | 'ruleAdmission'>,
): { validate: EndpointRegistration; mutate: EndpointRegistration } {
  const { store } = options;
  return {
    validate: {
      endpoint: 'validate-modrule',
      handler: ({ logger, answers }) =>
        failClosed(
          logger,
          answers,
        )((context) =>
          answerValidateModRule(context.request, context.url, {
            clusterNamespace: store.snapshot().clusterNamespace,
            servedKinds: options.servedKinds,
            allowSecrets: store.referencePolicy.allowSecrets,
            clusterScoped: store.referencePolicy.clusterScoped,
            hook: options.ruleAdmission,
            logger,
          }),
        ),
    },
    mutate: {
      endpoint: 'mutate-modrule',
      handler: ({ logger, answers }) => failClosed(logger, answers)(handlerOf(handleMutateModRule)),
    },
  };
}

/** Every endpoint modrule serves, by path, in the order the 404 answer lists them. */
export function standardEndpoints(options: EndpointOptions): Array<readonly [string, EndpointRegistration]> {
  const modRule = modRuleEndpoints(options);
  return [
    [WEBHOOK_PATHS.dragnet, dragnetEndpoint(options)],
    [WEBHOOK_PATHS.validateModRule, modRule.validate],
    [WEBHOOK_PATHS.mutateModRule, modRule.mutate],
    [
      WEBHOOK_PATHS.podBinding,
      {
        endpoint: 'podbinding',
        handler: ({ logger, answers }) =>
          failOpen(logger, answers)(podBindingHandler(options.onPodBinding, logger)),
      },
    ],
    [
      WEBHOOK_PATHS.dragnetProbe,
      {
        endpoint: 'dragnet-probe',
        handler: ({ logger, answers }) => failOpen(logger, answers)(handlerOf(handleDragnetProbe)),
      },
    ],
  ];
}
