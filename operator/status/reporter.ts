import { hostname } from 'node:os';
import { isJsonObject, jsonEqual, JsonObject, JsonValue } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { objectKey, metadataOf } from '../../util/meta';
import { ValidationProblem } from '../../rule/problems';
import { isTransient, KubeApiError, KubeClient, MERGE_PATCH } from '../../kube/kube';
import { demotedRuleEvent, identity, invalidRuleEvent, RuleIdentity, warningEvent } from './events';
import { composeStatus, statusPatch, statusUpToDate } from './compose';
import { Facet, FacetSource, READY_REASON_INVALID, StatusFacets } from './facets';
import { modRuleStatusPath } from '../../kube/owned';
import { Controller, ReconcileResult } from '../controller/controller';

/**
 * Which path serves a valid rule that asked to be served natively (operator/native/controller.ts): status.servedBy and the
 * Ready condition's reason and message. Rules that never asked carry neither (the webhook serves them).
 */
export interface Serving {
  servedBy: 'Webhook' | 'Native';
  reason: string;
  message: string;
}

export interface StatusReporterOptions {
  client: KubeClient;
  logger: Logger;
  /** Clock; injectable for tests. */
  now?: () => Date;
  /** Tries per status write for transient errors; default 5. */
  attempts?: number;
  backoffMs?: number;
  /** Told about every status write (metrics). */
  onWrite?: (result: 'ok' | 'failed') => void;
}

/** What the reporter last saw of a rule: enough to compose its status again when a facet changes. */
interface Observed {
  id: RuleIdentity;
  status: JsonObject;
  problems: readonly ValidationProblem[];
}

/**
 * The one writer of ModRules' status: composes each rule's whole status from its validation problems (report) and
 * the facets its sources set (StatusFacets), writes it to the status subresource when it differs from what the rule
 * carries (so the watch event our own write causes is a no-op), and emits an Event when a rule is invalid.
 */
export class StatusReporter implements StatusFacets {
  private readonly observed = new Map<string, Observed>();
  private readonly facets = new Map<string, Map<FacetSource, Facet>>();
  private readonly written = new Map<string, string>();
  /** The rules whose status is due to be composed and written: each key is a rule (namespace/name). */
  private readonly work: Controller;
  private readonly now: () => Date;
  /** This replica's name, as per-replica messages (quarantine, failures) and Events name it. */
  readonly instance = hostname();
  private disabledLogged = false;
  /** Status writes and events sent (tests and metrics). */
  writes = 0;

  constructor(private readonly options: StatusReporterOptions) {
    this.now = options.now ?? (() => new Date());
    this.work = new Controller(
      'ModRule status',
      { reconcile: (key) => this.write(key) },
      { logger: options.logger, keyName: 'rule', backoff: { initialMs: options.backoffMs ?? 500 } },
    );
    this.work.start();
  }

  /** A rule as the cluster has it, with its validation problems; its status is composed and written if it differs. */
  report(rule: JsonObject, problems: readonly ValidationProblem[]): void {
    const id = identity(rule);
    if (!id || this.work.signal.aborted) return;
    const key = objectKey(id.namespace, id.name);
    this.observed.set(key, { id, status: isJsonObject(rule.status) ? rule.status : {}, problems });
    this.queue(key);
  }

  /** Drops everything known of a deleted rule. */
  forget(namespace: string, name: string): void {
    const key = objectKey(namespace, name);
    this.observed.delete(key);
    this.facets.delete(key);
    this.written.delete(key);
  }

  set(namespace: string, name: string, source: FacetSource, facet: Facet): void {
    if (this.put(objectKey(namespace, name), source, facet)) this.queue(objectKey(namespace, name));
  }

  clear(namespace: string, name: string, source: FacetSource): void {
    if (this.put(objectKey(namespace, name), source, undefined)) this.queue(objectKey(namespace, name));
  }

  /**
   * The serving source's facet (operator/native/controller.ts): records which path serves a rule (undefined: it no longer
   * asks); true when that changed, and the rule's status must be reported again (by the caller, through the same
   * Ready gate as every report).
   */
  setServing(rule: JsonObject, serving: Serving | undefined): boolean {
    const id = identity(rule);
    if (!id) return false;
    const facet: Facet | undefined = serving && {
      ready: { status: 'True', reason: serving.reason, message: serving.message },
      servedBy: serving.servedBy,
    };
    return this.put(objectKey(id.namespace, id.name), 'serving', facet);
  }

  /** The identity of a rule as last reported (for Events of sources that only know its name). */
  identityOf(namespace: string, name: string): RuleIdentity | undefined {
    return this.observed.get(objectKey(namespace, name))?.id;
  }

  /** A Warning Event on a rule, written once per distinct message (e.g. a policy the API server refused). */
  async warn(rule: JsonObject, reason: string, message: string): Promise<void> {
    const id = identity(rule);
    if (id) await this.warnOnce(id, reason, message);
  }

  /** warn() for a rule known by name (sent in the background); false while it is not reported yet: try again. */
  warnNamed(namespace: string, name: string, reason: string, message: string): boolean {
    const id = this.identityOf(namespace, name);
    if (id) void this.warnOnce(id, reason, message);
    return id !== undefined;
  }

  private warnOnce(id: RuleIdentity, reason: string, message: string): Promise<void> {
    return this.postEvent(
      warningEvent(id, {
        reason,
        message,
        digestOf: `${id.uid}\n${reason}\n${message}`,
        now: this.now(),
        instance: this.instance,
      }),
    );
  }

  /** Resolves once every queued write has been attempted. */
  async idle(): Promise<void> {
    await this.work.idle();
  }

  async stop(): Promise<void> {
    await this.work.stop();
  }

  /** Puts a Warning Event on each of a demoted namespace's rules that ran in the offending request. */
  async reportDemotion(demotion: {
    reason: string;
    rules: ReadonlyArray<{ namespace: string; name: string }>;
  }): Promise<void> {
    for (const rule of demotion.rules)
      await this.postEvent(demotedRuleEvent(rule, demotion.reason, this.now(), this.instance));
  }

  /** Creates an Event; best-effort (logged at debug when it fails). */
  async postEvent(event: JsonObject): Promise<void> {
    const ns = String(metadataOf(event).namespace);
    try {
      await this.options.client.request('POST', `/api/v1/namespaces/${encodeURIComponent(ns)}/events`, {
        body: event,
      });
    } catch (err) {
      // 409: another replica already reported this very problem. Events are best-effort either way.
      if (!(err instanceof KubeApiError && err.status === 409)) {
        this.options.logger.debug('failed to emit event', { error: messageOf(err) });
      }
    }
  }

  /** Stores or drops a facet; true when it says something else than before. */
  private put(key: string, source: FacetSource, facet: Facet | undefined): boolean {
    const facets = this.facets.get(key);
    const before = facets?.get(source);
    if (before === facet || (before && facet && jsonEqual(before as JsonValue, facet as JsonValue)))
      return false;
    if (facet) {
      if (facets) facets.set(source, facet);
      else this.facets.set(key, new Map([[source, facet]]));
    } else if (facets) {
      facets.delete(source);
      if (facets.size === 0) this.facets.delete(key);
    }
    return true;
  }

  /** Composes and writes the rule's status soon (on a later microtask: what one call stack reports is written once). */
  private queue(key: string): void {
    if (this.work.signal.aborted || !this.observed.has(key)) return;
    this.work.enqueue(key);
  }

  /**
   * The reconcile of one rule's status: composes it and writes it when it differs from what the rule carries. A
   * transient failure throws (retried after the rule's backoff, `attempts` times in all); others are logged.
   */
  private async write(key: string): Promise<ReconcileResult | void> {
    const observed = this.observed.get(key);
    if (!observed) return;
    const { id, status, problems } = observed;
    const { status: want, recheckAt } = composeStatus({
      generation: id.generation,
      problems,
      facets: this.facets.get(key) ?? new Map(),
      current: status,
      instance: this.instance,
      now: this.now().getTime(),
    });
    // Composed again a second after another replica's word on it lapses (so the time has passed by then).
    const again: ReconcileResult | undefined =
      recheckAt === undefined
        ? undefined
        : { requeueAfter: Math.max(recheckAt - this.now().getTime(), 0) + 1_000 };
    if (statusUpToDate(status, want)) return again;
    // If the CRD prunes status, our write changes nothing and the rule never shows it: do not rewrite it forever.
    const signature = `${id.uid}|${id.resourceVersion}|${JSON.stringify(want)}`;
    if (this.written.get(key) === signature) return again;
    const path = modRuleStatusPath(id.namespace, id.name);
    try {
      const stored = await this.options.client.request('PATCH', path, {
        body: statusPatch(status, want, this.now()),
        contentType: MERGE_PATCH,
      });
      this.writes++;
      this.options.onWrite?.('ok');
      this.written.set(key, signature);
      // Until the watch brings it, the status written is what the next composition compares with.
      if (this.observed.get(key) === observed && isJsonObject(stored.status))
        this.observed.set(key, { ...observed, status: stored.status });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) {
        // The rule is gone, or the CRD has no status subresource (KubeMod's original CRD).
        if (!this.disabledLogged) {
          this.disabledLogged = true;
          this.options.logger.warn(
            'cannot write ModRule status (rule deleted, or CRD without status subresource)',
            { namespace: id.namespace, name: id.name },
          );
        }
        return;
      }
      const failures = this.work.queue.failures(key) + 1;
      if (isTransient(err) && failures < (this.options.attempts ?? 5)) throw err;
      this.options.onWrite?.('failed');
      this.options.logger.warn('failed to write ModRule status', {
        namespace: id.namespace,
        name: id.name,
        error: messageOf(err),
      });
      return again;
    }
    const ready = want.conditions[0];
    if (ready.reason === READY_REASON_INVALID)
      await this.postEvent(invalidRuleEvent(id, String(ready.message), this.now(), this.instance));
    return again;
  }
}

/** Where rule verdicts go: the StatusReporter, or something that holds them back first (operator/scope/ready-gate.ts). */
export type StatusSink = Pick<StatusReporter, 'report' | 'forget'>;
