import { Histogram, Registry } from 'prom-client';
import { Logger } from '../../util/logger';
import { generationOf, metaString, nameOf, objectKey } from '../../util/meta';
import { RuleStore } from '../../store/rules';
import { AdmissionRequest } from '../../webhook/admission';
import { RuleAdmissionHook, RuleAdmissionOutcome } from '../../webhook/rule-admission';
import { AdmittedRules, RuleVersion } from '../rules/admitted';
import { ScopeController } from '../scope/controller';
import { PeerNotifier } from './peers';
import { ConfirmedRules } from '../scope/ready-gate';
import { outsideNetPhrase } from '../scope/findings';

export interface RuleAdmissionDeps {
  store: RuleStore;
  admitted: AdmittedRules;
  scope: ScopeController;
  /** Rules whose registration was confirmed in force at admission: Ready as soon as the store has them. */
  confirmed: ConfirmedRules;
  /** Tells the other replicas, so that they hold their dragnet requests for it too. */
  peers?: Pick<PeerNotifier, 'notify'>;
  logger: Logger;
  registry?: Registry;
  /** Share of the admission's time for widening; the rest is for putting the configured net back. Default 0.6. */
  widenShare?: number;
  now?: () => number;
}

function versionOf(request: AdmissionRequest): RuleVersion | null {
  const obj = request.object;
  const uid = metaString(obj, 'uid');
  const namespace = request.namespace ?? metaString(obj, 'namespace');
  if (!obj || !uid || !namespace) return null;
  return { namespace, name: nameOf(obj) || (request.name ?? ''), uid, generation: generationOf(obj) ?? 0 };
}

/**
 * The operator's part of a valid ModRule's admission (not a dry run): the rule counts as admitted (the dragnet of
 * this replica, and of the peers it tells, waits for the store to have it), and the answer waits until the dragnet registration sends its objects, widening it
 * first when it must (ScopeController.ensure). When the widening does not make it in time the configured net is put
 * back and the writer is told (a warning); when nothing can be written, the write is refused.
 */
export function createRuleAdmission(deps: RuleAdmissionDeps): RuleAdmissionHook {
  const now = deps.now ?? Date.now;
  const waited = deps.registry
    ? new Histogram({
        name: 'modrule_rule_admission_wait_seconds',
        help: 'How long a ModRule create or update waited for the dragnet registration to send its objects.',
        buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers: [deps.registry],
      })
    : null;
  return async (request, budgetMs): Promise<RuleAdmissionOutcome> => {
    if (request.dryRun) return {};
    const rule = deps.store.compileRule(request.object).rule;
    const version = versionOf(request);
    if (!rule || !version) return {};
    deps.admitted.admit(version, rule);
    const start = now();
    const [outcome] = await Promise.all([
      deps.scope.ensure(rule, start + budgetMs * (deps.widenShare ?? 0.6), start + budgetMs),
      deps.peers?.notify(version, request.object ?? undefined),
    ]);
    waited?.observe((now() - start) / 1000);
    const key = objectKey(version.namespace, version.name);
    const outside = deps.scope.outsideNet(rule);
    // Admitted, but the net as installed never sends some of its kinds: as with KubeMod, now said (and on its status).
    const phrase = outsideNetPhrase(outside);
    const outsideWarnings = outside.length
      ? [
          `modrule: ${phrase.head}: the API server never sends the webhook ${phrase.objects}, so ModRule ${key} acts on none of them`,
        ]
      : [];
    switch (outcome.kind) {
      case 'covered':
      case 'widened':
        deps.confirmed.add(version.uid, version.generation);
        return outsideWarnings.length ? { warnings: outsideWarnings } : {};
      case 'fallback':
        if (outcome.confirmed) deps.confirmed.add(version.uid, version.generation);
        deps.logger.warn('ModRule admitted through the configured net', {
          rule: key,
          reason: outcome.reason,
        });
        return {
          warnings: [
            ...outsideWarnings,
            `modrule: the dragnet registration fell back to the configured (wide) net (${outcome.reason}); ` +
              `ModRule ${key} is in force through it${outcome.confirmed ? '' : ' as soon as the API server applies it'}`,
          ],
        };
      case 'failed':
        deps.admitted.forget(version);
        deps.logger.error('ModRule refused: the dragnet registration cannot send its objects', {
          rule: key,
          reason: outcome.reason,
        });
        return {
          refuse: {
            code: 503,
            reason: 'ServiceUnavailable',
            message:
              `ModRule ${key} was not admitted: the dragnet registration could not be widened to send its ` +
              `objects (${outcome.reason}); nothing was stored: retry once the API server accepts updates of ` +
              'the mutating webhook configuration',
          },
        };
    }
  };
}
