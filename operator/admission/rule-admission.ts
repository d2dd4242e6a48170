import { Counter, Histogram, Registry } from 'prom-client';
import { Logger } from '../../util/logger';
import { generationOf, metaString, nameOf, objectKey } from '../../util/meta';
import { RuleStore } from '../../store/rules';
import { AdmissionRequest } from '../../webhook/admission';
import { RuleAdmissionHook, RuleAdmissionOutcome } from '../../webhook/rule-admission';
import { AdmittedRules, RuleVersion, specDigest } from '../rules/admitted';
import { ScopeController } from '../scope/controller';
import { WidenOutcome } from '../scope/widener';
import { CompiledRule } from '../../rule/compile';
import { PeerFailure, PeerNotifier } from './peers';
import { ConfirmedRules } from '../scope/ready-gate';
import { outsideNetPhrase } from '../scope/findings';
import { NativeController } from '../native/controller';
import { HoldBack } from '../native/hold-back';

export interface RuleAdmissionDeps {
  store: RuleStore;
  admitted: AdmittedRules;
  scope: ScopeController;
  /** Rules whose registration was confirmed in force at admission: Ready as soon as the store has them. */
  confirmed: ConfirmedRules;
  /** Tells the other replicas, so that they hold their dragnet requests for it too. */
  peers?: Pick<PeerNotifier, 'notify'> & Partial<Pick<PeerNotifier, 'answered'>>;
  /** Takes a rule served natively back to the webhook before an edit of it is answered (its old policy out). */
  native?: Pick<NativeController, 'holdBack'>;
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
  const spec = specDigest(obj);
  return {
    namespace,
    name: nameOf(obj) || (request.name ?? ''),
    uid,
    generation: generationOf(obj) ?? 0,
    ...(spec ? { spec } : {}),
  };
}

/**
 * The writer's warning when peers were not told of the rule: each of them answers the requests the API server sends it
 * from its own store until its watch brings the rule (normally within a second), so the rule may miss objects written
 * right after this write returns, where that replica is the one called. The writer is the one who relies on the rule
 * being in force, and a replica that cannot be told is often one the API server cannot reach either (fail-open).
 */
function missedPeersWarning(key: string, missed: readonly PeerFailure[]): string[] {
  if (missed.length === 0) return [];
  const peers = missed.map((m) => `${m.peer}: ${m.error}`).join('; ');
  return [
    `modrule: ${missed.length} other replica(s) could not be told of ModRule ${key} (${peers}); objects they admit ` +
      'before their own watch brings the rule (normally within a second) may miss it',
  ];
}

const NOT_HELD: HoldBack = { kind: 'none' };

/** Whether the request changes a stored rule's spec (an UPDATE the old version's native policy must not outlive). */
function edits(request: AdmissionRequest): boolean {
  return request.operation === 'UPDATE' && specDigest(request.oldObject) !== specDigest(request.object);
}

/**
 * The writer's warning when the previous version's native policy was not shown out of force: objects written right
 * after the edit may still get its patch or rejection (besides the new version's), until the API servers drop it.
 */
function stillNativeWarning(key: string, held: HoldBack): string[] {
  if (held.kind !== 'unverified') return [];
  return [
    `modrule: the previous version of ModRule ${key} was served natively by ${held.policy}; its binding was ` +
      `taken away, but the API servers could not be shown to have dropped it (${held.reason}): objects written ` +
      "right after this write may still get the previous version's patch or rejection for a moment",
  ];
}

/**
 * The operator's part of a valid ModRule's admission (not a dry run): the rule counts as admitted (the dragnet of
 * this replica, and of the peers it tells, waits for the store to have it), and the answer waits until the dragnet registration sends its objects, widening it
 * first when it must (ScopeController.ensure). When the widening does not make it in time the configured net is put
 * back and the writer is told (a warning); when nothing can be written, the write is refused.
 */
export function createRuleAdmission(deps: RuleAdmissionDeps): RuleAdmissionHook {
  const admission = new RuleAdmission(deps);
  return (request, budgetMs) => admission.admit(request, budgetMs);
}

/** The hook's state: its metrics. */
class RuleAdmission {
  private readonly now: () => number;
  private readonly waited: Histogram | null;
  private readonly unverified: Counter | null;

  constructor(private readonly deps: RuleAdmissionDeps) {
    this.now = deps.now ?? Date.now;
    this.waited = deps.registry
      ? new Histogram({
          name: 'modrule_rule_admission_wait_seconds',
          help: 'How long a ModRule create or update waited for the dragnet registration to send its objects.',
          buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers: [deps.registry],
        })
      : null;
    this.unverified = deps.registry
      ? new Counter({
          name: 'modrule_rule_admissions_unverified_total',
          help: 'ModRule writes admitted in force by the settle time only: the API servers could not be probed (no probe webhook, probes refused, an API server unreachable).',
          registers: [deps.registry],
        })
      : null;
  }

  async admit(request: AdmissionRequest, budgetMs: number): Promise<RuleAdmissionOutcome> {
    const { deps } = this;
    if (request.dryRun) return {};
    const rule = deps.store.compileRule(request.object).rule;
    const version = versionOf(request);
    if (!rule || !version) return {};
    deps.admitted.admit(version, rule);
    const start = this.now();
    const { outcome, missed, held } = await this.inForce(rule, version, request, start + budgetMs, budgetMs);
    this.waited?.observe((this.now() - start) / 1000);
    // Answered from here on (a refusal forgets it below): the write lands now, or never; the peers are told too.
    deps.admitted.answered(version);
    const unanswered =
      (await deps.peers?.answered?.(
        version,
        outcome.kind === 'failed' ? 'refused' : 'allowed',
        request.object ?? undefined,
      )) ?? [];
    const key = objectKey(version.namespace, version.name);
    const outside = deps.scope.outsideNet(rule);
    // Admitted, but the net as installed never sends some of its kinds: as with KubeMod, now said (and on its status).
    const phrase = outsideNetPhrase(outside);
    const warnings = [
      ...(outside.length
        ? [
            `modrule: ${phrase.head}: the API server never sends the webhook ${phrase.objects}, so ModRule ${key} acts on none of them`,
          ]
        : []),
      ...missedPeersWarning(key, [
        ...missed,
        ...unanswered.filter((u) => !missed.some((m) => m.peer === u.peer)),
      ]),
      ...stillNativeWarning(key, held),
    ];
    return this.answer(outcome, version, key, warnings);
  }

  /**
   * Makes the rule in force: the scope ensured and the peers told at once (the notices are tried again within the
   * widening's share: the answer never waits longer than a widening may), then the scope once more now that the
   * peers know of the rule (they count it from here on): a scope one of them wrote before it heard of it may have
   * narrowed what the first look found (a read and, when unchanged, no API call more).
   */
  private async inForce(
    rule: CompiledRule,
    version: RuleVersion,
    request: AdmissionRequest,
    until: number,
    budgetMs: number,
  ): Promise<{ outcome: WidenOutcome; missed: PeerFailure[]; held: HoldBack }> {
    const { deps } = this;
    const widenBy = until - budgetMs * (1 - (deps.widenShare ?? 0.6));
    const told = deps.peers?.notify(version, request.object ?? undefined, widenBy, until);
    // The old version's policy goes once the peers know of the edit (so that none of them binds it again).
    const held = edits(request) ? this.holdBack(version, told, until) : Promise.resolve(NOT_HELD);
    const [first, missed] = await Promise.all([deps.scope.ensure(rule, widenBy, until), told]);
    if (first.kind !== 'covered' && first.kind !== 'widened')
      return { outcome: first, missed: missed ?? [], held: await held };
    const again = await deps.scope.ensure(rule, widenBy, until);
    const outcome =
      again.kind === 'covered' && first.kind === 'widened' ? { ...again, kind: 'widened' as const } : again;
    return { outcome, missed: missed ?? [], held: await held };
  }

  private async holdBack(
    version: RuleVersion,
    told: Promise<unknown> | undefined,
    until: number,
  ): Promise<HoldBack> {
    await told;
    return (await this.deps.native?.holdBack(version.namespace, version.name, until)) ?? NOT_HELD;
  }

  /** The answer to the writer for an outcome: admitted (with what to know), or refused with why. */
  private answer(
    outcome: WidenOutcome,
    version: RuleVersion,
    key: string,
    warnings: string[],
  ): RuleAdmissionOutcome {
    const { deps } = this;
    switch (outcome.kind) {
      case 'covered':
      case 'widened': {
        deps.confirmed.add(version.uid, version.generation);
        if (!outcome.unverified) return warnings.length ? { warnings } : {};
        // In force by the settle time only (the API servers could not be probed): said, so that someone looks.
        this.unverified?.inc();
        deps.logger.warn('ModRule admitted; in force unverified', { rule: key, reason: outcome.unverified });
        return {
          warnings: [
            ...warnings,
            `modrule: ModRule ${key} is in force, but the API servers could not be shown to use it: ${outcome.unverified}`,
          ],
        };
      }
      case 'fallback':
        if (outcome.confirmed) deps.confirmed.add(version.uid, version.generation);
        deps.logger.warn('ModRule admitted through the configured net', {
          rule: key,
          reason: outcome.reason,
        });
        return {
          warnings: [
            ...warnings,
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
  }
}
