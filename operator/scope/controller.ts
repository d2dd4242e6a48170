import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { CompiledRule } from '../../rule/compile';
import { reachOf, RuleScopeReport } from '../../scope/compute';
import { productsOf } from '../../scope/products';
import { decide, narrowingBlocked, readLive, ScopeMode, ScopeStamp } from '../../scope/ownership';
import { dragnetOf, scopeHash } from '../../scope/entry';
import { Scope } from '../../scope/types';
import { scopeIncludes } from '../../scope/union';
import { AdmittedRules } from '../rules/admitted';
import { Informer } from '../../kube/informer';
import { LiveScopeView } from './live';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { NativeScopes } from './native-scopes';
import { ScopeProbe } from './probe';
import { ScopeWriter } from './writer';
import { DesiredScope, writtenFields } from './desired';
import { createScopeMetrics, ScopeMetrics } from './metrics';
import { ScopeWidener, WidenOutcome } from './widener';
import {
  DRAGNET_WEBHOOK,
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_CONFIGURATIONS_PATH,
} from '../../kube/owned';
import type { CatalogSource } from '../rules/discovery';
import { Controller, ReconcileResult } from '../controller/controller';

export interface ScopeControllerOptions {
  client: KubeClient;
  logger: Logger;
  mode: ScopeMode;
  clusterNamespace: string;
  /** The rules the dragnet serves, read at each computation. */
  rules: () => readonly CompiledRule[];
  /** The ModRule resourceVersion those rules are at; null before the first list. */
  rulesVersion: () => string | null;
  /** Whether the rule store has its first full lists. */
  rulesReady: () => boolean;
  /** Subscribes to rule changes; returns the unsubscribe. */
  onRulesChange: (listener: () => void) => () => void;
  /** Which resources serve each kind (operator/rules/discovery.ts). */
  discovery: CatalogSource;
  registry?: Registry;
  configurationName?: string;
  webhookName?: string;
  /** Quiet time after a change before computing (rules come in bursts); default 200 ms. */
  debounceMs?: number;
  /** Longest a stream of changes may hold a computation back; default 2 s. */
  maxDelayMs?: number;
  /**
   * After the live registration changes, how long before rules it covers are reported Ready: each API server
   * applies a new configuration from its own watch, which no API tells; default 1 s.
   */
  settleMs?: number;
  /** Rules this replica admitted that the store has not seen yet (they count in force); none when absent. */
  admitted?: Pick<AdmittedRules, 'knows' | 'versions' | 'onChange'>;
  /** The operator's own namespace: where the registration probes are created (dry run). */
  probeNamespace?: string;
  /** How long the configured net is held after a fallback (no replica narrows meanwhile); default 60 s. */
  holdMs?: number;
  /** Clock; injectable for tests. */
  now?: () => number;
  /** The native policies: the last change seen (orders replicas), and a value that changes at every hand-over. */
  native?: { policiesVersion(): string | null; servingVersion(): string } | null;
  /** This replica's writer id in the stamp; default its start (ms) and a random part (a later start wins a tie). */
  id?: string;
  /** This replica's view of the live registration, shared with the Ready gate and the status; default its own. */
  live?: LiveScopeView;
  /** What the live registration does for native rules, shared with the native controller; default its own. */
  nativeScopes?: NativeScopes;
  /**
   * Told each computation's per-rule reports (operator/scope/findings.ts); `narrowed` false when the registration is
   * the configured net (wide mode, or narrowing given up), where they are computed for this alone.
   */
  onScope?: (reports: readonly RuleScopeReport[], narrowed: boolean) => void;
}

/** The work queue's one key: the dragnet registration. */
const DRAGNET = 'dragnet';

/**
 * Keeps the dragnet webhook's registration (rules, namespaceSelector, matchConditions) as narrow as the ModRules in
 * force allow (scope/compute.ts), or as configured with `mode: wide`. Writes are compare-and-swap updates of the
 * whole configuration (resourceVersion), so the caBundle writer (self-signed.ts, JSON patches of clientConfig) and
 * this one never undo each other, and stamped (scope/ownership.ts) so replicas converge. Whatever it cannot write
 * stays as it is: the configured net, or an earlier scope that the rules it covers are reported Ready against.
 */
export class ScopeController {
  private readonly informer: Informer;
  private readonly live: LiveScopeView;
  /** This replica's writer id in the stamp: its start and a random part (a later start wins a tie). */
  private readonly id: string;
  private readonly writer: ScopeWriter;
  private readonly unsubscribe: Array<() => void> = [];
  /** The one worker that writes the registration: its computations and the admissions' widenings, in turn. */
  private readonly work: Controller;
  private stopped = false;
  private readonly desired: DesiredScope;
  /** What the live registration does for rules served natively. */
  readonly nativeScopes: NativeScopes;
  private readonly widener: ScopeWidener;
  private readonly metrics: ScopeMetrics | null;

  constructor(private readonly options: ScopeControllerOptions) {
    this.id = options.id ?? `${Date.now()}-${randomBytes(4).toString('hex')}`;
    this.work = new Controller(
      'dragnet scope',
      { reconcile: () => this.reconcile() },
      {
        logger: options.logger,
        backoff: { initialMs: 500, maxMs: 30_000 },
        errorMessage: 'cannot update the dragnet registration; the current one stays',
        onError: (_key, err) => {
          this.live.setFailing(messageOf(err));
          this.metrics?.writes.inc({ result: 'failed' });
        },
      },
    );
    this.desired = new DesiredScope(options);
    const name = options.configurationName ?? MUTATING_WEBHOOK_CONFIGURATION;
    this.live = options.live ?? new LiveScopeView(options);
    this.nativeScopes = options.nativeScopes ?? new NativeScopes();
    this.writer = new ScopeWriter({ ...options, live: this.live });
    const update = (obj: JsonObject | null) => {
      if (this.live.accept(obj)) this.schedule();
    };
    this.informer = new Informer({
      client: options.client,
      logger: options.logger,
      path: MUTATING_WEBHOOK_CONFIGURATIONS_PATH,
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      fieldSelector: `metadata.name=${name}`,
      handlers: {
        replace: (items) => update(items[0] ?? null),
        upsert: (obj) => update(obj),
        remove: () => update(null),
      },
    });
    this.metrics = options.registry
      ? createScopeMetrics(options.registry, () => this.heldWide() !== null)
      : null;
    this.widener = new ScopeWidener({
      ...options,
      live: this.live,
      writer: this.writer,
      probe: new ScopeProbe({
        ...options,
        live: this.live,
        namespace: options.probeNamespace ?? options.clusterNamespace,
      }),
      id: this.id,
      narrowing: () => this.narrowing(),
      rulesVersion: () => options.rulesVersion(),
      nativeVersion: () => options.native?.policiesVersion() ?? null,
      desired: (live) => {
        const { registration, result } = this.desired.compute(live, this.narrowing());
        return { registration, index: result?.index ?? null };
      },
      pending: () => options.admitted?.versions() ?? [],
      onWrite: (result) => this.metrics?.writes.inc({ result }),
      onFallback: () => this.schedule(),
      request: () => this.work.enqueue(DRAGNET),
      now: () => this.now(),
    });
  }

  /** Makes the registration send an admitted rule's objects (ScopeWidener.ensure). */
  ensure(rule: CompiledRule, widenBy: number, until: number): Promise<WidenOutcome> {
    return this.widener.ensure(rule, widenBy, until);
  }

  /** Served kinds the rule names that the configured net never sends ([] until the net and discovery are read). */
  outsideNet(rule: CompiledRule): string[] {
    const live = this.live.scope();
    const catalog = this.options.discovery.catalog();
    if (!live || !catalog) return [];
    return productsOf(reachOf(rule, this.options.clusterNamespace), live.configured.rules, catalog).outside;
  }

  /** Why a rule's objects may not be sent yet: the registration is held, or cannot be written (status). */
  whyNotSent(): string {
    return this.live.whyNotSent();
  }

  /** Why the registration is held at the configured net, or null (metric, status). */
  heldWide(): string | null {
    return this.live.heldWide();
  }

  start(): void {
    // The store also changes with every Namespace and Node update: compute again only when the rules moved.
    let version: string | null | undefined;
    this.unsubscribe.push(
      this.options.onRulesChange(() => {
        const now = `${this.options.rulesVersion()}|${this.options.native?.servingVersion() ?? ''}`;
        if (now === version) return;
        version = now;
        this.schedule();
      }),
    );
    this.unsubscribe.push(this.options.discovery.onChange(() => this.schedule()));
    if (this.options.admitted) this.unsubscribe.push(this.options.admitted.onChange(() => this.schedule()));
    this.work.start();
    this.informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    this.widener.abort('the operator is stopping');
    this.live.stop();
    await Promise.all([this.informer.stop(), this.work.stop()]);
  }

  /** Calls `listener` when what covers() answers may have changed. */
  onChange(listener: () => void): () => void {
    return this.live.onChange(listener);
  }

  /**
   * Whether the API servers send the objects of a rule at `ruleVersion` (its resourceVersion): the live registration
   * is the configured net, or a scope computed from rules at least that new, in place for settleMs.
   */
  covers(ruleVersion: string): boolean {
    return this.live.covers(ruleVersion);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Computes after a quiet time, but not later than maxDelayMs after the first change. */
  private schedule(): void {
    if (!this.stopped)
      this.work.enqueueDebounced(DRAGNET, this.options.debounceMs ?? 200, this.options.maxDelayMs ?? 2000);
  }

  /**
   * The worker's one reconcile: the admissions waiting for a widening first (their answer is on the clock), else
   * a computation from the rules in force. A failure is retried after the queue's backoff.
   */
  private async reconcile(): Promise<ReconcileResult | void> {
    if (this.widener.waiting) {
      await this.widener.serve();
      // The computation the admitted rules asked for comes after (from a fresh read).
      return { requeueAfter: 0 };
    }
    const result = await this.follow();
    this.live.setFailing(null);
    return result;
  }

  /** Writes the registration the rules in force need, when the stamps say this replica should. */
  private async follow(): Promise<ReconcileResult | void> {
    if (this.stopped || !this.live.seen || !this.options.rulesReady()) return;
    const held = this.live.heldUntil();
    if (held > this.now()) return this.later(held);
    const rulesVersion = this.options.rulesVersion();
    // Until discovery is in, kind-pinned rules would get the whole net: wait rather than write twice.
    if (rulesVersion === null || (this.options.mode === 'rules' && !this.options.discovery.catalog())) return;
    await this.writer.refetch(rulesVersion);
    const config = this.live.configuration;
    const webhook = this.live.dragnet();
    if (!config || !webhook) return;
    const live = readLive(config, webhook);
    const { registration, result, full } = this.desired.compute(live, this.narrowing());
    this.desired.report(result, live);
    const hash = scopeHash(registration);
    this.live.setComputed({ hash, rulesVersion });
    if (result) this.widener.remember(hash, result.index);
    this.live.notify();
    const nativeVersion = this.options.native?.policiesVersion() ?? undefined;
    const ctx = {
      now: this.now(),
      landed: (uid: string, generation: number) => this.landed(uid, generation),
    };
    const decision = decide(
      live,
      registration,
      { rulesVersion, writer: this.id, mode: this.options.mode, nativeVersion },
      ctx,
    );
    if (decision.reason === 'current') this.nativeScopes.confirm(result, this.live.givenUp);
    this.metrics?.conditions.set(registration.matchConditions.length);
    this.metrics?.webhookRules.set(registration.rules.length);
    if (!decision.write) {
      this.options.logger.debug('dragnet registration unchanged', { reason: decision.reason, rulesVersion });
      // Someone else's write left out a rule admitted here and not stored yet: put it back (a union, never narrower).
      if (this.options.admitted?.versions().length && !scopeIncludes(live.current, registration))
        this.widener.repair();
      const blocked = live.ours ? narrowingBlocked(live.stamp, ctx) : null;
      return blocked ? this.later(blocked.until) : undefined;
    }
    // Rules pending elsewhere that this store has not seen stay in the stamp (this registration covers them too).
    const pending = (live.stamp?.pending ?? []).filter(
      (p) => p.until > ctx.now && !ctx.landed(p.uid, p.generation),
    );
    const stamp: ScopeStamp = {
      hash,
      rulesVersion,
      writer: this.id,
      mode: this.options.mode,
      ...(nativeVersion ? { nativeVersion } : {}),
      ...(pending.length > 0 ? { pending } : {}),
    };
    try {
      const stored = await this.writer.write(config, registration, stamp, live.configured);
      this.metrics?.writes.inc({ result: 'ok' });
      const back = dragnetOf(stored, this.options.webhookName ?? DRAGNET_WEBHOOK);
      if (!back || scopeHash(readLive(stored, back.webhook).current) !== hash) {
        // Stored differently (an API server before 1.28 drops matchConditions): a coarser scope, else the net.
        const next = this.desired.stepDown(full, result);
        if (next) {
          this.options.logger.error(
            'the API server stored another dragnet registration; trying a coarser one',
            { precision: result?.precision, next },
          );
          return { requeueAfter: 0 };
        }
        await this.giveUp(stored, live.configured);
        return;
      }
      this.nativeScopes.confirm(result, this.live.givenUp);
      this.options.logger.info('dragnet registration updated', {
        reason: decision.reason,
        mode: this.options.mode,
        rulesVersion,
        ...writtenFields(registration, result),
      });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) {
        this.metrics?.writes.inc({ result: 'conflict' });
        return { requeueAfter: 0 }; // someone wrote first: decide again on what they wrote
      }
      // A regex RE2 takes but CEL's does not, a limit of an older API server: the same rules, less precise.
      const next =
        err instanceof KubeApiError && (err.status === 422 || err.status === 400)
          ? this.desired.stepDown(full, result)
          : null;
      if (next) {
        this.metrics?.writes.inc({ result: 'invalid' });
        this.options.logger.error('the API server refused the dragnet scope; trying a coarser one', {
          precision: result?.precision,
          next,
          error: messageOf(err).slice(0, 2000),
        });
        return { requeueAfter: 0 };
      }
      // A rule needs more than the live registration sends and it cannot be written: the configured net, held.
      if (!scopeIncludes(live.current, registration))
        await this.widener.fallback(
          `cannot write the dragnet registration: ${messageOf(err)}`,
          this.now() + 10_000,
        );
      throw err;
    }
  }

  /** Whether the registration follows the rules (else it is the configured net: wide mode, or narrowing given up). */
  private narrowing(): boolean {
    return this.options.mode === 'rules' && !this.live.givenUp;
  }

  /** Whether the computation counts this rule version (stored, or admitted here): no need to keep it in the stamp. */
  private landed(uid: string, generation: number): boolean {
    return this.options.admitted?.knows(uid, generation) ?? false;
  }

  /** Computes again at `at` (a hold or a pending rule's time is up). */
  private later(at: number): ReconcileResult {
    return { requeueAfter: Math.max(0, at - this.now()) + 10 };
  }

  /** The API server stored something other than what was written: put the configured net back, stop narrowing. */
  private async giveUp(stored: JsonObject, configured: Scope): Promise<void> {
    this.live.giveUp();
    this.nativeScopes.confirm(null, true);
    this.options.logger.error(
      'the stored dragnet registration differs from the one written; restoring the configured net',
    );
    if (this.writer.dragnetOf(stored)) await this.writer.write(stored, configured, null, configured);
  }
}
