import { randomBytes } from 'node:crypto';
import { JsonObject } from '../../util/json';
import { messageOf } from '../../util/errors';
import { CompiledRule } from '../../rule/compile';
import { reachOf } from '../../scope/compute';
import { productsOf } from '../../scope/products';
import { Informer } from '../../kube/informer';
import { LiveScopeView } from './live';
import { NativeScopes } from './native-scopes';
import { ScopeProbe } from './probe';
import { ScopeWriter } from './writer';
import { DesiredScope } from './desired';
import { createScopeMetrics, ScopeMetrics } from './metrics';
import { ScopeWidener, WidenOutcome } from './widener';
import { RuleFollower } from './follow';
import { ScopeControllerOptions } from './options';

export type { ScopeControllerOptions } from './options';
import { MUTATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATIONS_PATH } from '../../kube/owned';
import { Controller, ReconcileResult } from '../controller/controller';

/** The work queue's keys: the dragnet's scope, and the proof that the API servers use the live one. */
const DRAGNET = 'dragnet';
const PROBE = 'probe';
const APISERVERS = 'apiservers';

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
  private readonly follower: RuleFollower;
  private readonly probe: ScopeProbe;
  private probeMisses = 0;
  private readonly metrics: ScopeMetrics | null;

  constructor(private readonly options: ScopeControllerOptions) {
    this.id = options.id ?? `${Date.now()}-${randomBytes(4).toString('hex')}`;
    this.work = new Controller(
      'dragnet scope',
      { reconcile: (key) => this.reconcileKey(key) },
      {
        logger: options.logger,
        // An API server that restarts refuses connections, then answers 403 (its RBAC not loaded yet) and 429 for a
        // while: the registration is looked at again within 5 s of the last refusal, 2 s while there is no answer, so
        // its rules' NotInForce clears seconds after the API server is back (one GET a retry, one replica each).
        backoff: { initialMs: 500, maxMs: 5_000 },
        unansweredMaxMs: 2_000,
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
    this.probe = new ScopeProbe({
      ...options,
      live: this.live,
      namespace: options.probeNamespace ?? options.clusterNamespace,
      apiServers: () => options.apiServers?.targets() ?? [],
    });
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
      probe: this.probe,
      id: this.id,
      narrowing: () => this.follower.narrowing(),
      rulesVersion: () => options.rulesVersion(),
      nativeVersion: () => options.native?.policiesVersion() ?? null,
      desired: (live) => {
        const { registration, result } = this.desired.compute(live, this.follower.narrowing());
        return { registration, index: result?.index ?? null };
      },
      pending: () => options.admitted?.versions() ?? [],
      onWrite: (result) => this.metrics?.writes.inc({ result }),
      onFallback: () => this.schedule(),
      request: () => this.work.enqueue(DRAGNET),
      now: () => this.now(),
    });
    this.follower = new RuleFollower({
      ...{ options, id: this.id, live: this.live, writer: this.writer, desired: this.desired },
      ...{ widener: this.widener, nativeScopes: this.nativeScopes, metrics: this.metrics },
      stopped: () => this.stopped,
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
    this.unsubscribe.push(this.live.onChange(() => this.work.enqueue(PROBE)));
    if (this.options.apiServers) this.work.enqueue(APISERVERS);
    this.work.start();
    this.informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    this.widener.abort('the operator is stopping');
    if (!this.options.live) this.live.stop(); // a shared view is stopped by its owner
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
  /** The worker's reconcile of one key: the API servers' list, the proof of the live scope, or the scope itself. */
  private async reconcileKey(key: string): Promise<ReconcileResult | void> {
    if (key === PROBE) return this.probeLive();
    if (key !== APISERVERS) return this.reconcile();
    await this.options.apiServers?.refresh();
    // API servers come and go with a control plane's rollout: looked at again every half minute.
    return { requeueAfter: 30_000 };
  }

  /**
   * Proves the live configuration in force in the background (each version once), so that the Ready gate reports
   * rules in force and a later admission that it covers is answered without an API call; looked at again, less and
   * less often, until the API servers use it.
   */
  private async probeLive(): Promise<ReconcileResult | void> {
    if (this.stopped || !this.live.configuration || this.probe.confirmedNow) {
      this.probeMisses = 0;
      return;
    }
    if ((await this.probe.once()).inForce) {
      this.probeMisses = 0;
      return;
    }
    return { requeueAfter: Math.min(50 * 2 ** this.probeMisses++, 5_000) };
  }

  private async reconcile(): Promise<ReconcileResult | void> {
    if (this.widener.waiting) {
      await this.widener.serve();
      // The computation the admitted rules asked for comes after (from a fresh read).
      return { requeueAfter: 0 };
    }
    const result = await this.follower.run();
    this.live.setFailing(null);
    return result;
  }
}
