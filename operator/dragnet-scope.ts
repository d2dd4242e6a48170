import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { isJsonObject, JsonObject } from '../util/json';
import { Logger } from '../util/logger';
import { CompiledRule } from '../modrule/compile';
import { ResourceCatalog } from '../scope/catalog';
import { computeScope, Precision, PRECISIONS, RuleScopeReport, ScopeResult } from '../scope/compute';
import { decide, LiveScope, readLive, ScopeMode, ScopeStamp, stampAnnotations } from '../scope/ownership';
import { dragnetOf, registrationHash, withRegistration } from '../scope/registration';
import { Registration } from '../scope/types';
import { Backoff } from '../kube/backoff';
import { DragnetScopeMetrics, dragnetScopeMetrics } from './dragnet-scope-metrics';
import { Informer } from '../kube/informer';
import { LiveRegistration } from './live-registration';
import { KubeApiError, KubeClient } from '../kube/kube';
import { NativeNets } from './native-net';
import {
  DRAGNET_WEBHOOK,
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_CONFIGURATIONS_PATH,
} from '../config/owned';

/** Rules whose notes mention `text`, for the log: how many, and the first ten by name. */
function noted(result: ScopeResult | null, text: string, field: string): Record<string, unknown> {
  const rules = result
    ? result.rules.filter((r) => r.notes.some((n) => n.includes(text))).map((r) => r.rule)
    : [];
  return rules.length === 0 ? {} : { [field]: rules.length, [`${field}Rules`]: rules.slice(0, 10) };
}

/** Discovery as the scope reads it: the current catalog (null until loaded) and its changes. */
export interface CatalogSource {
  catalog(): ResourceCatalog | null;
  onChange(listener: () => void): () => void;
}

export interface DragnetScopeOptions {
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
  /** Which resources serve each kind (operator/discovery.ts). */
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
  /** Clock; injectable for tests. */
  now?: () => number;
  /** The native policies: the last change seen (orders replicas), and a value that changes at every hand-over. */
  native?: { policiesVersion(): string | null; servingVersion(): string };
  /**
   * Told each computation's per-rule reports (operator/unknown-kinds.ts); `narrowed` false when the registration is
   * the configured net (wide mode, or narrowing given up), where they are computed for this alone.
   */
  onScope?: (reports: readonly RuleScopeReport[], narrowed: boolean) => void;
}

/**
 * Keeps the dragnet webhook's registration (rules, namespaceSelector, matchConditions) as narrow as the ModRules in
 * force allow (scope/compute.ts), or as configured with `mode: wide`. Writes are compare-and-swap updates of the
 * whole configuration (resourceVersion), so the caBundle writer (self-signed.ts, JSON patches of clientConfig) and
 * this one never undo each other, and stamped (scope/ownership.ts) so replicas converge. Whatever it cannot write
 * stays as it is: the configured net, or an earlier scope that the rules it covers are reported Ready against.
 */
export class DragnetScope {
  private readonly informer: Informer;
  private readonly live: LiveRegistration;
  private readonly writer = `${Date.now()}-${randomBytes(4).toString('hex')}`;
  private readonly unsubscribe: Array<() => void> = [];
  private timer: NodeJS.Timeout | null = null;
  private firstPending = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
  private retryTimer: NodeJS.Timeout | null = null;
  /** What this replica computed last: its registration's hash and the rules version it was computed at. */
  private computed: { hash: string; rulesVersion: string } | null = null;
  /** The precision to use instead of `full`, per full-precision registration the API server refused. */
  private refused = new Map<string, Precision>();
  /** After a write the API server stored differently: stop narrowing (the configured net was put back). */
  private disabled = false;
  private readonly metrics: DragnetScopeMetrics | null;
  /** What the live registration does for rules served natively. */
  readonly nativeNets = new NativeNets();

  constructor(private readonly options: DragnetScopeOptions) {
    const name = options.configurationName ?? MUTATING_WEBHOOK_CONFIGURATION;
    this.live = new LiveRegistration(options);
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
    this.metrics = options.registry ? dragnetScopeMetrics(options.registry) : null;
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
    this.informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    for (const t of [this.timer, this.retryTimer]) if (t) clearTimeout(t);
    this.live.stop();
    await Promise.all([this.informer.stop(), this.running]);
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
    return this.live.covers(ruleVersion, this.computed);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Computes after a quiet time, but not later than maxDelayMs after the first change. */
  private schedule(): void {
    if (this.stopped) return;
    const now = this.now();
    if (!this.timer) this.firstPending = now;
    else clearTimeout(this.timer);
    const wait = Math.min(
      this.options.debounceMs ?? 200,
      Math.max(0, this.firstPending + (this.options.maxDelayMs ?? 2000) - now),
    );
    this.timer = setTimeout(() => {
      this.timer = null;
      this.run();
    }, wait);
  }

  private run(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.reconcile();
          this.backoff.reset();
        } catch (err) {
          this.options.logger.warn('cannot update the dragnet registration; the current one stays', {
            error: (err as Error).message,
          });
          this.metrics?.writes.inc({ result: 'failed' });
          if (this.retryTimer) clearTimeout(this.retryTimer);
          this.retryTimer = setTimeout(() => this.schedule(), this.backoff.next());
          this.retryTimer.unref();
        }
      } while (this.again && !this.stopped);
      this.running = null;
    })();
  }

  /**
   * The registration to write for the live one: the configured net (wide mode), else the scope at full precision,
   * or at the coarser precision the API server was left with when it refused that one.
   */
  private desired(live: LiveScope): { registration: Registration; result: ScopeResult | null; full: string } {
    if (this.options.mode === 'wide' || this.disabled)
      return { registration: live.configured, result: null, full: registrationHash(live.configured) };
    const compute = (precision: Precision) =>
      computeScope({
        rules: this.options.rules(),
        clusterNamespace: this.options.clusterNamespace,
        configured: live.configured,
        catalog: this.options.discovery.catalog(),
        precision,
      });
    let result = compute(PRECISIONS[0]);
    const full = registrationHash(result.registration);
    const fallback = this.refused.get(full);
    if (fallback) result = compute(fallback);
    return { registration: result.registration, result, full };
  }

  /** The per-rule reports to onScope: the computation's, or on the configured net one made for them alone. */
  private report(result: ScopeResult | null, live: LiveScope): void {
    const { onScope } = this.options;
    if (!onScope) return;
    const reports =
      result?.rules ??
      computeScope({
        rules: this.options.rules(),
        clusterNamespace: this.options.clusterNamespace,
        configured: live.configured,
        catalog: this.options.discovery.catalog(),
        precision: 'resources',
      }).rules;
    onScope(reports, result !== null);
  }

  private async reconcile(): Promise<void> {
    if (this.stopped || !this.live.seen || !this.options.rulesReady()) return;
    const rulesVersion = this.options.rulesVersion();
    // Until discovery is in, kind-pinned rules would get the whole net: wait rather than write twice.
    if (rulesVersion === null || (this.options.mode === 'rules' && !this.options.discovery.catalog())) return;
    await this.refetch(rulesVersion);
    const config = this.live.configuration;
    const webhook = this.live.dragnet();
    if (!config || !webhook) return;
    const live = readLive(config, webhook);
    const { registration, result, full } = this.desired(live);
    this.report(result, live);
    const hash = registrationHash(registration);
    this.computed = { hash, rulesVersion };
    this.live.notify();
    const nativeVersion = this.options.native?.policiesVersion() ?? undefined;
    const decision = decide(live, registration, {
      rulesVersion,
      writer: this.writer,
      mode: this.options.mode,
      nativeVersion,
    });
    if (decision.reason === 'current') this.nativeNets.confirm(result, this.disabled);
    this.metrics?.conditions.set(registration.matchConditions.length);
    this.metrics?.webhookRules.set(registration.rules.length);
    if (!decision.write) {
      this.options.logger.debug('dragnet registration unchanged', { reason: decision.reason, rulesVersion });
      return;
    }
    const stamp: ScopeStamp = { hash, rulesVersion, writer: this.writer, mode: this.options.mode };
    if (nativeVersion) stamp.nativeVersion = nativeVersion;
    try {
      const stored = await this.write(config, webhook, registration, stamp, live.configured);
      this.metrics?.writes.inc({ result: 'ok' });
      this.live.accept(stored);
      const back = dragnetOf(stored, this.options.webhookName ?? DRAGNET_WEBHOOK);
      if (!back || registrationHash(readLive(stored, back.webhook).current) !== hash) {
        // Stored differently (an API server before 1.28 drops matchConditions): a coarser scope, else the net.
        const at = result ? PRECISIONS.indexOf(result.precision) : PRECISIONS.length - 1;
        if (at < PRECISIONS.length - 1) {
          this.options.logger.error(
            'the API server stored another dragnet registration; trying a coarser one',
            {
              precision: PRECISIONS[at],
              next: PRECISIONS[at + 1],
            },
          );
          this.refused.set(full, PRECISIONS[at + 1]);
          this.again = true;
        } else await this.giveUp(stored, live.configured);
        return;
      }
      this.nativeNets.confirm(result, this.disabled);
      this.options.logger.info('dragnet registration updated', {
        reason: decision.reason,
        mode: this.options.mode,
        rulesVersion,
        webhookRules: registration.rules.length,
        resources: [...new Set(registration.rules.flatMap((r) => r.resources))].length,
        conditions: registration.matchConditions.length,
        selectorNames: result?.stats.selectorNames ?? 0,
        precision: result?.precision ?? 'configured',
        coarsened: result?.coarsened ?? [],
        ...noted(result, 'not served', 'unknownKinds'),
        ...noted(result, 'outside the configured net', 'outsideNet'),
      });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) {
        this.metrics?.writes.inc({ result: 'conflict' });
        this.again = true; // someone wrote first: decide again on what they wrote
        return;
      }
      const at = result ? PRECISIONS.indexOf(result.precision) : PRECISIONS.length - 1;
      if (
        err instanceof KubeApiError &&
        (err.status === 422 || err.status === 400) &&
        at < PRECISIONS.length - 1
      ) {
        // A regex RE2 takes but CEL's does not, a limit of an older API server: the same rules, less precise.
        this.metrics?.writes.inc({ result: 'invalid' });
        if (this.refused.size >= 100) this.refused.clear();
        this.refused.set(full, PRECISIONS[at + 1]);
        this.options.logger.error('the API server refused the dragnet scope; trying a coarser one', {
          precision: PRECISIONS[at],
          next: PRECISIONS[at + 1],
          error: err.message.slice(0, 2000),
        });
        this.again = true;
        return;
      }
      throw err;
    }
  }

  /** Compare-and-swap update of the whole configuration: its resourceVersion guards every other field. */
  private async write(
    config: JsonObject,
    webhook: JsonObject,
    registration: Registration,
    stamp: ScopeStamp | null,
    configured: Registration,
  ): Promise<JsonObject> {
    const meta = isJsonObject(config.metadata) ? { ...config.metadata } : {};
    delete meta.managedFields;
    const annotations = isJsonObject(meta.annotations) ? { ...meta.annotations } : {};
    if (stamp) Object.assign(annotations, stampAnnotations(stamp, configured));
    meta.annotations = annotations;
    const hooks = (Array.isArray(config.webhooks) ? config.webhooks : []).map((h) =>
      h === webhook ? withRegistration(webhook, registration) : h,
    );
    const name = String(meta.name);
    return this.options.client.request(
      'PUT',
      `${MUTATING_WEBHOOK_CONFIGURATIONS_PATH}/${encodeURIComponent(name)}`,
      {
        body: { ...config, metadata: meta, webhooks: hooks },
      },
    );
  }

  /** The API server stored something other than what was written: put the configured net back, stop narrowing. */
  private async giveUp(stored: JsonObject, configured: Registration): Promise<void> {
    this.disabled = true;
    this.nativeNets.confirm(null, true);
    this.options.logger.error(
      'the stored dragnet registration differs from the one written; restoring the configured net',
    );
    const back = dragnetOf(stored, this.options.webhookName ?? DRAGNET_WEBHOOK);
    if (back) this.live.accept(await this.write(stored, back.webhook, configured, null, configured));
  }

  /** Reads the configuration from the API server (a consistent read), noting the rules version it is fresh for. */
  private async refetch(rulesVersion: string): Promise<void> {
    const name = this.options.configurationName ?? MUTATING_WEBHOOK_CONFIGURATION;
    let got: JsonObject | null;
    try {
      got = await this.options.client.request(
        'GET',
        `${MUTATING_WEBHOOK_CONFIGURATIONS_PATH}/${encodeURIComponent(name)}`,
      );
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      got = null;
    }
    this.live.acceptRead(got, rulesVersion);
  }
}
