import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { isJsonObject, JsonObject } from '../util/json';
import { Logger } from '../util/logger';
import { formatProblems, ValidationProblem } from '../modrule/problems';
import { MODRULE_API_VERSION, MODRULE_KIND } from '../modrule/types';
import { Backoff, sleep } from './backoff';
import { isTransient, KubeApiError, KubeClient, MERGE_PATCH } from './kube';
import { conditionUpToDate, RuleCondition, withTransitionTime } from './references/status';

/** Kubernetes caps condition messages at 32 KiB; a readable status needs far less. */
const MAX_MESSAGE = 4096;

export const READY_REASON_VALID = 'Valid';
export const READY_REASON_INVALID = 'Invalid';
export const INVALID_EVENT_REASON = 'InvalidModRule';
export const DEMOTED_EVENT_REASON = 'NamespaceDemoted';

/** The Ready condition as we want it on the ModRule, without lastTransitionTime. */
export interface ReadyCondition {
  type: 'Ready';
  status: 'True' | 'False';
  reason: string;
  message: string;
  observedGeneration?: number;
}

/**
 * Which path serves a valid rule that asked to be served natively (operator/native.ts): status.servedBy and the
 * Ready condition's reason and message. Rules that never asked carry neither (the webhook serves them).
 */
export interface Serving {
  servedBy: 'Webhook' | 'Native';
  reason: string;
  message: string;
}

/** The parts of a ModRule's metadata status writes and Events name. */
export interface RuleIdentity {
  namespace: string;
  name: string;
  uid: string;
  generation: number | undefined;
  resourceVersion: string;
}

/** The rule's identity, or null without name/namespace. */
export function identity(rule: JsonObject): RuleIdentity | null {
  const m = isJsonObject(rule.metadata) ? rule.metadata : null;
  if (!m || typeof m.name !== 'string' || typeof m.namespace !== 'string') return null;
  return {
    namespace: m.namespace,
    name: m.name,
    uid: typeof m.uid === 'string' ? m.uid : '',
    generation: typeof m.generation === 'number' ? m.generation : undefined,
    resourceVersion: typeof m.resourceVersion === 'string' ? m.resourceVersion : '',
  };
}

function truncate(s: string): string {
  return s.length <= MAX_MESSAGE ? s : `${s.slice(0, MAX_MESSAGE - 3)}...`;
}

/** The Ready condition a ModRule should carry given its validation problems. */
export function readyCondition(
  generation: number | undefined,
  problems: readonly ValidationProblem[],
  serving?: Serving,
): ReadyCondition {
  const base = generation === undefined ? {} : { observedGeneration: generation };
  return problems.length === 0
    ? {
        type: 'Ready',
        status: 'True',
        reason: serving?.reason ?? READY_REASON_VALID,
        message: truncate(serving?.message ?? 'ModRule is valid and in effect'),
        ...base,
      }
    : {
        type: 'Ready',
        status: 'False',
        reason: READY_REASON_INVALID,
        message: truncate(formatProblems(problems)),
        ...base,
      };
}

function currentReady(rule: JsonObject): JsonObject | undefined {
  const status = isJsonObject(rule.status) ? rule.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  return conditions.find((c): c is JsonObject => isJsonObject(c) && c.type === 'Ready');
}

/** True when the rule's status already says what `want` (and `extra`) say (lastTransitionTime aside). */
export function statusUpToDate(
  rule: JsonObject,
  want: ReadyCondition,
  servedBy?: string,
  extra: readonly RuleCondition[] = [],
): boolean {
  const status = isJsonObject(rule.status) ? rule.status : {};
  const have = currentReady(rule);
  return (
    !!have &&
    extra.every((c) => conditionUpToDate(rule, c)) &&
    status.servedBy === servedBy &&
    have.status === want.status &&
    have.reason === want.reason &&
    have.message === want.message &&
    have.observedGeneration === want.observedGeneration &&
    status.observedGeneration === want.observedGeneration
  );
}

/** The merge patch for the status subresource; keeps lastTransitionTime while the status value stays the same. */
export function statusPatch(
  rule: JsonObject,
  want: ReadyCondition,
  now: Date,
  servedBy?: string,
  extra: readonly RuleCondition[] = [],
): JsonObject {
  const have = currentReady(rule);
  const time = now.toISOString().replace(/\.\d+Z$/, 'Z');
  const lastTransitionTime =
    have && have.status === want.status && typeof have.lastTransitionTime === 'string'
      ? have.lastTransitionTime
      : time;
  const condition: JsonObject = { ...want, lastTransitionTime };
  return {
    status: {
      observedGeneration: want.observedGeneration ?? null,
      conditions: [condition, ...extra.map((c) => withTransitionTime(rule, c, time))],
      servedBy: servedBy ?? null,
    },
  };
}

/** A core/v1 Warning Event on the ModRule; its name is derived from the content so replicas create it only once. */
export function invalidRuleEvent(rule: JsonObject, message: string, now: Date, instance: string): JsonObject {
  const id = identity(rule);
  if (!id) throw new Error('ModRule without name/namespace');
  return warningEvent(
    id,
    INVALID_EVENT_REASON,
    `ModRule is invalid and is not applied: ${message}`,
    `${id.uid}\n${id.generation ?? ''}\n${message}`,
    now,
    instance,
  );
}

/**
 * A Warning Event on a rule of a namespace the webhook demoted (its requests got a small budget for a while). The
 * name hashes the rule, reason and minute, so replicas demoting the same namespace at once write it only once.
 */
export function demotedRuleEvent(
  rule: { namespace: string; name: string },
  reason: string,
  now: Date,
  instance: string,
): JsonObject {
  const id: RuleIdentity = { ...rule, uid: '', generation: undefined, resourceVersion: '' };
  const message =
    `namespace ${rule.namespace} demoted (${reason}): this rule ran in a request that was too expensive; ` +
    `the namespace's admissions get a small evaluation budget for a while (see modrule_namespace_demotions_total)`;
  const minute = Math.floor(now.getTime() / 60_000);
  return warningEvent(id, DEMOTED_EVENT_REASON, message, `${id.name}\n${reason}\n${minute}`, now, instance);
}

/** A core/v1 Warning Event on a ModRule; the name hashes `digestOf`, so replicas create the same one once. */
export function warningEvent(
  id: RuleIdentity,
  reason: string,
  message: string,
  digestOf: string,
  now: Date,
  instance: string,
): JsonObject {
  const digest = createHash('sha256').update(digestOf).digest('hex').slice(0, 16);
  const time = now.toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${id.name.slice(0, 200)}.${digest}`, namespace: id.namespace },
    involvedObject: {
      apiVersion: MODRULE_API_VERSION,
      kind: MODRULE_KIND,
      name: id.name,
      namespace: id.namespace,
      ...(id.uid ? { uid: id.uid } : {}),
      ...(id.resourceVersion ? { resourceVersion: id.resourceVersion } : {}),
    },
    reason,
    message: truncate(message),
    type: 'Warning',
    source: { component: 'modrule-operator' },
    reportingComponent: 'modrule-operator',
    reportingInstance: instance,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
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
  /**
   * The Ready condition to write instead of `want` (operator/quarantine.ts: a quarantined rule is Degraded), or
   * null to leave the rule's status as it is.
   */
  ready?: (
    rule: JsonObject,
    problems: readonly ValidationProblem[],
    want: ReadyCondition,
  ) => ReadyCondition | null;
  /** Conditions besides Ready a valid rule carries (ReferenceMissing: operator/references/status.ts). */
  conditions?: (rule: JsonObject) => readonly RuleCondition[];
}

interface Pending {
  rule: JsonObject;
  problems: readonly ValidationProblem[];
}

/**
 * Writes the Ready condition to ModRules' status subresource and emits an Event when one is invalid. Writes only
 * when the status differs from what the rule already carries, so the watch event our own write causes is a no-op.
 */
export class StatusReporter {
  private readonly pending = new Map<string, Pending>();
  private readonly written = new Map<string, string>();
  private running: Promise<void> | null = null;
  private readonly controller = new AbortController();
  private readonly now: () => Date;
  private readonly instance = hostname();
  private disabledLogged = false;
  /** Status writes and events sent (tests and metrics). */
  writes = 0;

  constructor(private readonly options: StatusReporterOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** Queues a status update for a rule; a newer report for the same rule replaces a queued one. */
  report(rule: JsonObject, problems: readonly ValidationProblem[]): void {
    const id = identity(rule);
    if (!id || this.controller.signal.aborted) return;
    this.pending.set(`${id.namespace}/${id.name}`, { rule, problems });
    this.kick();
  }

  // A report that lands between the last write and the drain's end starts a new drain, which resets `running` when
  // it ends too (a bare restart left `running` set for good, and no status was written again).
  private kick(): void {
    this.running ??= this.drain().finally(() => {
      this.running = null;
      if (this.pending.size > 0 && !this.controller.signal.aborted) this.kick();
    });
  }

  /** Drops queued work for a deleted rule. */
  forget(namespace: string, name: string): void {
    this.pending.delete(`${namespace}/${name}`);
    this.serving.delete(`${namespace}/${name}`);
  }

  // Which path serves the rules that asked to be served natively (set by operator/native.ts).
  private readonly serving = new Map<string, Serving>();

  /**
   * Records which path serves a rule (undefined: it no longer asks); true when that changed, and the rule's status
   * must be reported again (by the caller, through the same gate as every report).
   */
  setServing(rule: JsonObject, serving: Serving | undefined): boolean {
    const id = identity(rule);
    if (!id) return false;
    const key = `${id.namespace}/${id.name}`;
    const before = this.serving.get(key);
    if (serving) this.serving.set(key, serving);
    else this.serving.delete(key);
    return JSON.stringify(before) !== JSON.stringify(serving);
  }

  /** A Warning Event on a rule, written once per distinct message (e.g. a policy the API server refused). */
  async warn(rule: JsonObject, reason: string, message: string): Promise<void> {
    const id = identity(rule);
    if (!id) return;
    await this.postEvent(
      warningEvent(id, reason, message, `${id.uid}\n${reason}\n${message}`, this.now(), this.instance),
    );
  }

  /** Resolves once every queued write has been attempted. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.controller.abort();
    this.pending.clear();
    await this.idle();
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0 && !this.controller.signal.aborted) {
      const [key, item] = this.pending.entries().next().value as [string, Pending];
      this.pending.delete(key);
      await this.write(key, item);
    }
  }

  private async write(key: string, { rule, problems }: Pending): Promise<void> {
    const id = identity(rule);
    if (!id) return;
    const serving = problems.length === 0 ? this.serving.get(key) : undefined;
    const computed = readyCondition(id.generation, problems, serving);
    const want = this.options.ready ? this.options.ready(rule, problems, computed) : computed;
    const extra = problems.length === 0 ? (this.options.conditions?.(rule) ?? []) : [];
    if (want === null || statusUpToDate(rule, want, serving?.servedBy, extra)) return;
    // If the CRD prunes status, our write changes nothing and the rule never shows it: do not rewrite it forever.
    const signature = `${id.uid}|${id.resourceVersion}|${JSON.stringify([want, extra])}|${serving?.servedBy ?? ''}`;
    if (this.written.get(key) === signature) return;
    const path = `/apis/api.kubemod.io/v1beta1/namespaces/${encodeURIComponent(id.namespace)}/modrules/${encodeURIComponent(id.name)}/status`;
    const backoff = new Backoff({ initialMs: this.options.backoffMs ?? 500 });
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.client.request('PATCH', path, {
          body: statusPatch(rule, want, this.now(), serving?.servedBy, extra),
          contentType: MERGE_PATCH,
        });
        this.writes++;
        this.options.onWrite?.('ok');
        this.written.set(key, signature);
        break;
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) {
          // The rule is gone, or the CRD has no status subresource (KubeMod's original CRD).
          if (!this.disabledLogged) {
            this.disabledLogged = true;
            this.options.logger.warn(
              'cannot write ModRule status (rule deleted, or CRD without status subresource)',
              {
                namespace: id.namespace,
                name: id.name,
              },
            );
          }
          return;
        }
        if (!isTransient(err) || attempt >= (this.options.attempts ?? 5) || this.controller.signal.aborted) {
          this.options.onWrite?.('failed');
          this.options.logger.warn('failed to write ModRule status', {
            namespace: id.namespace,
            name: id.name,
            error: (err as Error).message,
          });
          return;
        }
        await sleep(backoff.next(), this.controller.signal);
        // A newer version of the rule arrived meanwhile: that report supersedes this one.
        if (this.pending.has(key)) return;
      }
    }
    if (want.reason === READY_REASON_INVALID) await this.emitEvent(rule, want.message);
  }

  /** Puts a Warning Event on each of a demoted namespace's rules that ran in the offending request. */
  async reportDemotion(demotion: {
    reason: string;
    rules: ReadonlyArray<{ namespace: string; name: string }>;
  }): Promise<void> {
    for (const rule of demotion.rules)
      await this.postEvent(demotedRuleEvent(rule, demotion.reason, this.now(), this.instance));
  }

  private async emitEvent(rule: JsonObject, message: string): Promise<void> {
    await this.postEvent(invalidRuleEvent(rule, message, this.now(), this.instance));
  }

  /** Creates an Event; best-effort (logged at debug when it fails). */
  async postEvent(event: JsonObject): Promise<void> {
    const ns = String((event.metadata as JsonObject).namespace);
    try {
      await this.options.client.request('POST', `/api/v1/namespaces/${encodeURIComponent(ns)}/events`, {
        body: event,
      });
    } catch (err) {
      // 409: another replica already reported this very problem. Events are best-effort either way.
      if (!(err instanceof KubeApiError && err.status === 409)) {
        this.options.logger.debug('failed to emit event', { error: (err as Error).message });
      }
    }
  }
}
