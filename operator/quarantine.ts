import { hostname } from 'node:os';
import { isJsonObject, JsonObject } from '../util/json';
import { Logger } from '../util/logger';
import { ValidationProblem } from '../modrule/problems';
import { RuleStore } from '../store/rules';
import { QuarantineChange, QuarantineState, RuleQuarantine } from '../webhook/quarantine';
import { KubeApiError, KubeClient } from './kube';
import { identity, ReadyCondition, StatusReporter, warningEvent } from './status';

// What a tenant sees of a quarantined ModRule (webhook/quarantine.ts): Ready=False with reason Degraded on the rule,
// and a Warning Event, so that `kubectl get modrule` and `kubectl describe modrule` say which rule and why.

export const DEGRADED_REASON = 'Degraded';
export const QUARANTINED_EVENT_REASON = 'ModRuleQuarantined';

const MODRULES = '/apis/api.kubemod.io/v1beta1/namespaces';
// Degraded messages start so; the time tells other replicas how long to leave the condition alone.
const UNTIL = /^quarantined until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) on replica (\S+):/;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

/** The Ready condition of a valid rule quarantined on replica `instance`. */
export function degradedCondition(
  state: QuarantineState,
  observedGeneration: number | undefined,
  instance: string,
): ReadyCondition {
  return {
    type: 'Ready',
    status: 'False',
    reason: DEGRADED_REASON,
    message:
      `quarantined until ${iso(state.until)} on replica ${instance}: ran out of its share of the request budget ` +
      `${state.offences} times (last: ${state.reason}); skipped meanwhile (a Reject rule still rejects, without its ` +
      `rejectMessage). Make the rule cheaper, or split it; the quarantine ends by itself or when the rule changes`,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
}

/** The Warning Event of one quarantine. */
export function quarantineEvent(
  rule: JsonObject,
  state: QuarantineState,
  now: Date,
  instance: string,
): JsonObject {
  const id = identity(rule);
  if (!id) throw new Error('ModRule without name/namespace');
  const message = degradedCondition(state, undefined, instance).message;
  return warningEvent(
    id,
    QUARANTINED_EVENT_REASON,
    message,
    `${id.uid}\nquarantined\n${state.until}`,
    now,
    instance,
  );
}

function readyOf(rule: JsonObject): JsonObject | undefined {
  const status = isJsonObject(rule.status) ? rule.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  return conditions.find((c): c is JsonObject => isJsonObject(c) && c.type === 'Ready');
}

export interface QuarantineStatusOptions {
  client: KubeClient;
  logger: Logger;
  store: RuleStore;
  quarantine: RuleQuarantine;
  /** Clock (tests). */
  now?: () => Date;
}

/**
 * Reports this replica's quarantines on the ModRules: a Warning Event when one starts, the Ready condition
 * Degraded while it lasts (through StatusReporter's `ready` hook, so the validation status and this one never
 * undo each other), Ready again when it ends. Quarantine is per replica: a replica leaves another one's Degraded
 * condition alone until the time it names, then puts Ready back.
 */
export class QuarantineStatus {
  private status: StatusReporter | null = null;
  private readonly now: () => Date;
  private readonly instance = hostname();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private unsubscribe: () => void = () => undefined;

  constructor(private readonly options: QuarantineStatusOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Starts reporting through `status` (created with `ready: (...) => this.ready(...)`). Straight to it, not through
   * the operator's Ready gate: a quarantined rule ran in the dragnet, so the registration already sends its objects.
   */
  attach(status: StatusReporter): void {
    this.status = status;
    this.unsubscribe = this.options.quarantine.subscribe((change) => void this.changed(change));
  }

  /** StatusReporter's hook: Degraded while the rule is quarantined here, left alone while another replica's is. */
  ready(
    rule: JsonObject,
    problems: readonly ValidationProblem[],
    want: ReadyCondition,
  ): ReadyCondition | null {
    const id = identity(rule);
    if (!id || problems.length > 0) return want;
    const state = this.options.quarantine.stateOf(id.namespace, id.name);
    if (state) return degradedCondition(state, want.observedGeneration, this.instance);
    // Another replica's quarantine of this very generation of the rule (ours would be in `state`).
    const have = readyOf(rule);
    const theirs =
      have?.reason === DEGRADED_REASON && have.observedGeneration === want.observedGeneration
        ? UNTIL.exec(String(have.message))
        : null;
    const end = theirs && theirs[2] !== this.instance ? Date.parse(theirs[1]) : NaN;
    if (end > this.now().getTime()) {
      // Another replica's quarantine: its condition stands until then; look again at that time.
      this.refreshAt(id.namespace, id.name, end);
      return null;
    }
    return want;
  }

  /** Stops listening and drops the pending timers. */
  stop(): void {
    this.unsubscribe();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private async changed(change: QuarantineChange): Promise<void> {
    // A changed rule's new version is reported by ClusterSync (through the Ready gate); the hook then finds no
    // quarantine.
    if (change.kind === 'offence' || (change.kind === 'released' && change.why === 'rule changed')) return;
    const ref = change.kind === 'quarantined' ? change.state.rule : change.rule;
    const rule = await this.fetch(ref.namespace, ref.name);
    if (!rule) return;
    if (change.kind === 'quarantined') {
      await this.status?.postEvent(quarantineEvent(rule, change.state, this.now(), this.instance));
    }
    this.report(rule);
  }

  private refreshAt(namespace: string, name: string, at: number): void {
    const key = `${namespace}/${name}`;
    if (this.timers.has(key)) return;
    // A second late, so the time has passed when the hook looks again.
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        void this.fetch(namespace, name).then((rule) => rule && this.report(rule));
      },
      Math.max(at - this.now().getTime(), 0) + 1_000,
    );
    timer.unref();
    this.timers.set(key, timer);
  }

  // The status reporter decides (through the hook) what the rule's Ready condition should say now.
  private report(rule: JsonObject): void {
    const { problems } = this.options.store.compileRule(rule);
    this.status?.report(rule, problems);
  }

  private async fetch(namespace: string, name: string): Promise<JsonObject | null> {
    const path = `${MODRULES}/${encodeURIComponent(namespace)}/modrules/${encodeURIComponent(name)}`;
    try {
      return await this.options.client.request('GET', path);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) {
        this.options.logger.warn('cannot read a quarantined ModRule to report on it', {
          namespace,
          name,
          error: (err as Error).message,
        });
      }
      return null;
    }
  }
}
