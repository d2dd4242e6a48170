import { JsonObject } from '../../util/json';
import { generationOf, keyOf, metaString, objectKey, splitKey, metadataOf } from '../../util/meta';
import { CompiledRule } from '../../rule/compile';
import { defaultDragnetMatch, DragnetMatch, NativeFit, policyName, residualRule } from '../../native';

import { InformerHandlers } from '../../kube/informer';
import { applyOwned, lookAtCluster, probeInForce, probeNamespace, ruleKeyOf } from './api';
import { FitContext, fitOf, stillAsWritten, written } from './fit';
import { OwnedPolicies } from './owned';
import { Controller, ReconcileResult } from '../controller/controller';
import {
  nativeRulesGauge,
  nativeServing,
  countStates,
  pendingServing,
  READY_REASON_NOT_NATIVE,
  READY_REASON_REFUSED,
  READY_REASON_UNAVAILABLE,
  REFUSED_EVENT_REASON,
  showServing,
  webhookServing as webhook,
} from './status';
import { Serving } from '../status/reporter';
import { NativeControllerOptions, RuleState } from './types';
import { HoldBack, holdBackCounter, takeOutOfForce } from './hold-back';
import { AskingRules } from './asking';
import { MUTATING_WEBHOOK_CONFIGURATION } from '../../kube/owned';

/*
 * Serves ModRules natively where they fit: compiles each rule that asks for it to a policy and binding,
 * writes them, and only once the API server accepted both (and a settle time passed, for its caches) tells the store
 * to leave the rule to the policy, so the webhook serves just the residual. Anything going wrong sends the rule back
 * to the webhook first: a refused policy, one deleted or edited by someone else (it is then written again), a rule
 * edit (taken back while the edit is admitted, holdBack; the new version waits for its own policy), the rule going
 * away (its policy is deleted).
 */

export type { NativeControllerOptions, NativeMode } from './types';

/** The work queue's key for the periodic look at everything (rule keys always hold a '/'). */
const RESYNC = '<resync>';

/** Keeps policies in step with the rules that ask to be served natively. Feed it ModRules as ClusterSync does. */
export class NativeController implements InformerHandlers {
  private readonly rules: AskingRules;
  private readonly states = new Map<string, RuleState>();
  private readonly work: Controller;
  /** Owned policies and bindings as the API server has them. */
  private readonly owned: OwnedPolicies;
  /** Bumped at every hand-over and hand-back, before the store changes (the dragnet scope computes again). */
  private handovers = 0;
  private unavailable: string | undefined = 'not checked yet';
  private dragnet: DragnetMatch;
  // Reconciling waits for the first look at the cluster (is the API served, what does the dragnet see).
  private markStarted!: () => void;
  private readonly started = new Promise<void>((resolve) => (this.markStarted = resolve));
  /** The reconcile running now (a hold-back waits for one of its rule: it may be writing the binding). */
  private current: { key: string; done: Promise<unknown> } | null = null;
  private readonly holdBacks: ReturnType<typeof holdBackCounter>;

  constructor(private readonly options: NativeControllerOptions) {
    this.dragnet = defaultDragnetMatch(options.podNamespace);
    this.rules = new AskingRules(options.mode);
    // Transient API errors: the rule stays where it is served now and is tried again after its backoff.
    this.work = new Controller(
      'native policy',
      { reconcile: (key) => this.reconcileTracked(key) },
      {
        logger: options.logger,
        ready: this.started,
        keyName: 'rule',
        backoff: { initialMs: options.retryMs ?? 2000 },
      },
    );
    if (options.registry)
      nativeRulesGauge(options.registry, () => countStates(this.rules.keys(), this.states));
    this.holdBacks = holdBackCounter(options.registry);
    this.owned = new OwnedPolicies({
      ...options,
      onChange: (obj, gone) => this.ownedChanged(obj, gone),
    });
  }

  /** Checks the API, starts watching owned policies, and re-checks everything every resyncMs. */
  async start(): Promise<void> {
    this.work.start();
    await this.checkCluster();
    this.markStarted();
    if (!this.unavailable) this.owned.start();
    this.work.enqueueAfter(RESYNC, this.resyncMs);
  }

  async stop(): Promise<void> {
    this.markStarted();
    await Promise.all([this.work.stop(), this.owned.stop()]);
  }

  private get resyncMs(): number {
    return this.options.resyncMs ?? 60_000;
  }

  /** Resolves when no reconcile work is queued or running (tests). */
  async idle(): Promise<void> {
    await this.work.idle();
  }

  /** The last change to the owned policies this replica saw (the dragnet scope's stamp orders replicas by it). */
  policiesVersion(): string | null {
    return this.owned.version;
  }

  /** Changes whenever a rule moves between the webhook and its policy (the dragnet scope computes again). */
  servingVersion(): string {
    return String(this.handovers);
  }

  /** The dragnet registration changed what it does for native rules: their Ready messages say it again. */
  netChanged(): void {
    for (const [key, state] of this.states) {
      const raw = this.rules.get(key);
      if (!raw || !state.native || !state.kind || !state.held || !state.guards) continue;
      const net = this.options.net?.(key);
      this.show(raw, nativeServing(state.kind, policyName(state.held), state.guards, net));
    }
  }

  // ClusterSync's observer: the ModRules, after the store took them.
  replace(items: JsonObject[]): void {
    const keys = new Set(items.map(keyOf));
    for (const key of [...this.rules.keys()]) if (!keys.has(key)) this.forgetRule(key);
    for (const item of items) this.upsert(item);
    // A relist serves every rule by webhook again (RuleStore.replaceRules): all go through acceptance anew.
    for (const state of this.states.values()) state.native = false;
    for (const key of this.states.keys()) this.enqueue(key);
  }

  upsert(obj: JsonObject): void {
    const key = keyOf(obj);
    this.rules.take(obj, this.states.has(key));
    if (this.rules.has(key) || this.states.has(key)) this.enqueue(key);
  }

  remove(obj: JsonObject): void {
    this.forgetRule(keyOf(obj));
  }

  private forgetRule(key: string): void {
    this.rules.forget(key);
    if (this.states.has(key)) this.enqueue(key);
  }

  private enqueue(key: string): void {
    this.work.enqueue(key);
  }

  private reconcileTracked(key: string): Promise<ReconcileResult | void> {
    const current = (this.current = { key, done: this.reconcile(key) });
    return current.done.finally(() => {
      if (this.current === current) this.current = null;
    });
  }

  /** Brings one rule's policy, binding, store entry and status to what the rule asks for now (or resyncs all). */
  private async reconcile(key: string): Promise<ReconcileResult | void> {
    if (key === RESYNC) {
      await this.resyncAll();
      return { requeueAfter: this.resyncMs };
    }
    const raw = this.rules.get(key);
    const { namespace, name } = splitKey(key);
    const held = this.options.store.ruleOf(namespace, name);
    if (!raw) return this.teardown(key, this.rules.takeLeaving(key), undefined);
    // An edit admitted and not stored yet: no binding until it landed, or failed (the stored version is served then).
    if (this.editPending(key)) return { requeueAfter: 250 };
    if (!held) return this.teardown(key, raw, undefined);
    if (this.unavailable) return this.teardown(key, raw, webhook(READY_REASON_UNAVAILABLE, this.unavailable));
    const fit = fitOf(held, this.fitContext(), this.options.store);
    if (typeof fit === 'string') return this.teardown(key, raw, webhook(READY_REASON_NOT_NATIVE, fit));
    await this.serve(key, raw, held, fit);
  }

  private fitContext(): FitContext {
    return { clusterNamespace: this.options.clusterNamespace, dragnet: this.dragnet };
  }

  private async serve(key: string, raw: JsonObject, held: CompiledRule, fit: NativeFit): Promise<void> {
    const { client, store, status } = this.options;
    const uid = String(metadataOf(raw).uid ?? '');
    const state = this.states.get(key) ?? { native: false };
    this.states.set(key, state);
    const { policy, binding } = written(fit, uid);
    const kind = String(policy.kind);
    if (state.kind && state.kind !== kind) await this.deletePolicies(state.kind, policyName(held));
    state.kind = kind;
    let changed = false;
    for (const obj of [policy, binding]) {
      const result = await applyOwned(client, obj);
      if (typeof result === 'object') {
        const message = `the API server refused the ${String(obj.kind)}: ${result.refused}`;
        await this.teardown(key, raw, webhook(READY_REASON_REFUSED, message));
        await status?.warn(raw, REFUSED_EVENT_REASON, message);
        return;
      }
      if (result !== 'unchanged') changed = true;
      if (result === 'created') this.owned.recreated(String(obj.kind), policyName(held));
    }
    if (state.native && state.held === held && !changed) return;
    if (changed || state.held !== held || state.acceptedAt === undefined) {
      // Accepted now: both run for a while, then the webhook leaves the rule (a rule that fits is idempotent).
      state.held = held;
      state.acceptedAt = Date.now();
      state.inForce = false;
      if (state.native) this.handovers++;
      state.native = false;
      store.serveByWebhook(held.namespace, held.name);
      this.show(raw, pendingServing(kind, policyName(held)));
    }
    if (!(await this.inForce(key, state, policy))) return;
    const wait = state.acceptedAt + (this.options.settleMs ?? 2000) - Date.now();
    if (wait > 0) {
      this.work.enqueueAfter(key, wait);
      return;
    }
    // Counted before the store tells its listeners (the dragnet scope computes again on this count).
    this.handovers++;
    if (!store.serveNatively(held, residualRule(held, fit.guards))) {
      // A newer version arrived in between: it gets its own turn.
      state.acceptedAt = undefined;
      return;
    }
    state.native = true;
    state.guards = fit.guards.list.map((g) => g.what);
    const partial = state.guards.length > 0;
    this.show(raw, nativeServing(kind, policyName(held), state.guards, this.options.net?.(key)));
    this.options.logger.info('ModRule served natively', { rule: key, policy: policyName(held), partial });
  }

  /**
   * Whether the API server runs the policy written (a probe answered with its token); if not yet, the rule is looked
   * at again shortly (both paths serve it meanwhile). Where no namespace the policy sees is known to probe in, the
   * settle time alone decides.
   */
  private async inForce(key: string, state: RuleState, policy: JsonObject): Promise<boolean> {
    if (state.inForce) return true;
    const namespace = probeNamespace(this.options.store, this.dragnet, splitKey(key).namespace);
    if (namespace === undefined || (await probeInForce(this.options.client, policy, namespace))) {
      state.inForce = true;
      return true;
    }
    const waited = Date.now() - (state.acceptedAt ?? Date.now());
    this.work.enqueueAfter(key, waited < 10_000 ? 100 : 2_000);
    return false;
  }

  private show(raw: JsonObject, serving: Serving | undefined): void {
    showServing(this.options, raw, serving);
  }

  /** The webhook serves the rule in full; its policy and binding (if any) go. */
  private async teardown(
    key: string,
    raw: JsonObject | undefined,
    serving: Serving | undefined,
  ): Promise<void> {
    const state = this.states.get(key);
    const { namespace, name } = splitKey(key);
    const wasNative = state?.native === true;
    // Not native from here on: the delete events of its own policy and binding are no alarm.
    if (state) state.native = false;
    if (wasNative) this.handovers++;
    this.options.store.serveByWebhook(namespace, name);
    if (raw) this.show(raw, serving);
    const policy = `modrule.${namespace}.${name}`;
    for (const kind of state?.kind ? [state.kind] : ['MutatingAdmissionPolicy', 'ValidatingAdmissionPolicy'])
      await this.deletePolicies(kind, policy);
    if (wasNative && raw)
      this.options.logger.info('ModRule back on the webhook', { rule: key, reason: serving?.reason });
    else if (wasNative) this.options.logger.info('native policy removed with its ModRule', { rule: key });
    this.states.delete(key);
    if (raw && serving) this.states.set(key, { native: false });
  }

  /**
   * Takes a rule served natively (or being handed over) back to the webhook for an edit being admitted: its binding
   * goes as the controller's own deletion, then this waits until the API servers no longer run the policy, by
   * `until` (hold-back.ts). The edit is pending in options.edits already: no reconcile binds it again meanwhile.
   */
  async holdBack(namespace: string, name: string, until: number): Promise<HoldBack> {
    const key = objectKey(namespace, name);
    const policy = policyName({ namespace, name });
    while (this.current?.key === key) await this.current.done.catch(() => undefined);
    const state = this.states.get(key);
    const kinds = (
      state?.kind ? [state.kind] : ['MutatingAdmissionPolicy', 'ValidatingAdmissionPolicy']
    ).filter((kind) => state?.kind || this.owned.has(`${kind}Binding`, policy) || !this.synced());
    if (kinds.length === 0 || this.unavailable) return { kind: 'none' };
    this.toWebhook(key);
    const unbind = async () => {
      for (const kind of kinds) await this.owned.delete(`${kind}Binding`, policy);
    };
    const { store, logger, client, apiServers } = this.options;
    const targets = [{ name: 'the API server', client }, ...(apiServers?.() ?? [])];
    const where = probeNamespace(store, this.dragnet, namespace);
    return takeOutOfForce(
      { logger, counter: this.holdBacks, unbind, targets, namespace: where },
      key,
      policy,
      until,
    );
  }

  /** The rule is served by the webhook in full from now (its policy may still act: the caller sees to it). */
  private toWebhook(key: string): void {
    const state = this.states.get(key);
    const { namespace, name } = splitKey(key);
    if (state?.native) this.handovers++;
    if (state) Object.assign(state, { native: false, acceptedAt: undefined, inForce: false });
    this.options.store.serveByWebhook(namespace, name);
  }

  /** Whether an edit of the rule newer than the version the informer delivered is admitted and not stored yet. */
  private editPending(key: string): boolean {
    const raw = this.rules.get(key);
    if (!raw || !this.options.edits) return false;
    const { namespace, name } = splitKey(key);
    return this.options.edits.editPending(namespace, name, metaString(raw, 'uid'), generationOf(raw) ?? 0);
  }

  private async deletePolicies(kind: string, name: string): Promise<void> {
    if (!this.owned.has(kind, name) && !this.owned.has(`${kind}Binding`, name) && this.synced()) return;
    await this.owned.delete(`${kind}Binding`, name);
    await this.owned.delete(kind, name);
  }

  private synced(): boolean {
    return !this.unavailable && this.owned.synced();
  }

  // An owned policy or binding edited or deleted by someone else sends its rule back to the webhook at once (it is
  // written again); one whose rule no longer asks for it is deleted.
  private ownedChanged(obj: JsonObject, gone: boolean): void {
    const key = ruleKeyOf(obj);
    if (!key) return;
    const state = this.states.get(key);
    if (gone && this.owned.ownDeletion(obj)) return this.enqueue(key);
    if (state?.native && (gone || !this.stillAsWritten(key, obj))) {
      this.toWebhook(key);
      const object = `${String(obj.kind)}/${String(metadataOf(obj).name)}`;
      // Another replica took the rule back for an edit it admits (holdBack): expected, no alarm.
      if (gone && this.editPending(key))
        this.options.logger.info('native binding deleted for an edit; back on the webhook', {
          rule: key,
          object,
        });
      else
        this.options.logger.warn(
          'native policy changed or deleted behind the operator; back on the webhook',
          {
            rule: key,
            object,
          },
        );
    }
    this.enqueue(key);
  }

  /** Whether an owned object still says what the operator wrote for the rule. */
  private stillAsWritten(key: string, obj: JsonObject): boolean {
    const { namespace, name } = splitKey(key);
    const compiled = this.rules.has(key) ? this.options.store.ruleOf(namespace, name) : undefined;
    return !!compiled && stillAsWritten(compiled, this.fitContext(), obj);
  }

  private async checkCluster(): Promise<void> {
    const { client, logger } = this.options;
    const seen = await lookAtCluster(
      client,
      this.options.webhookConfiguration ?? MUTATING_WEBHOOK_CONFIGURATION,
    );
    this.unavailable = seen.unavailable;
    if (seen.dragnet) this.dragnet = seen.dragnet;
    if (this.unavailable)
      logger.warn('native policies unavailable; every rule stays on the webhook', {
        reason: this.unavailable,
      });
  }

  private async resyncAll(): Promise<void> {
    const before = this.unavailable;
    await this.checkCluster();
    if (before && !this.unavailable) this.owned.start();
    for (const key of new Set([...this.rules.keys(), ...this.states.keys()])) this.enqueue(key);
    // Owned objects whose rule no longer asks for them.
    for (const obj of this.owned.objects()) {
      const key = ruleKeyOf(obj);
      if (key && !this.rules.has(key)) this.enqueue(key);
    }
  }
}
