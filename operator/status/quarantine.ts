import { JsonObject } from '../../util/json';
import { RuleStore } from '../../store/rules';
import { QuarantineChange, QuarantineState, RuleQuarantine } from '../../webhook/quarantine';
import { RuleIdentity, warningEvent } from './events';
import { StatusReporter } from './reporter';
import { isoSeconds, ReadyVerdict } from './facets';

// What a tenant sees of a quarantined ModRule (webhook/quarantine.ts): Ready=False with reason Degraded on the rule,
// and a Warning Event, so that `kubectl get modrule` and `kubectl describe modrule` say which rule and why.

export const DEGRADED_REASON = 'Degraded';
export const QUARANTINED_EVENT_REASON = 'ModRuleQuarantined';

/**
 * Ready of a valid rule quarantined on replica `instance`. The message starts `quarantined until <time> on replica
 * <name>`: a per-replica word that other replicas leave alone until then (operator/status/facets.ts, holdOf).
 */
export function degradedVerdict(state: QuarantineState, instance: string): ReadyVerdict {
  return {
    status: 'False',
    reason: DEGRADED_REASON,
    message:
      `quarantined until ${isoSeconds(state.until)} on replica ${instance}: ran out of its share of the request ` +
      `budget ${state.offences} times (last: ${state.reason}); skipped meanwhile (a Reject rule still rejects, ` +
      `without its rejectMessage). Make the rule cheaper, or split it; the quarantine ends by itself or when the ` +
      `rule changes`,
  };
}

/** The Warning Event of one quarantine. */
export function quarantineEvent(
  id: RuleIdentity,
  state: QuarantineState,
  now: Date,
  instance: string,
): JsonObject {
  const message = degradedVerdict(state, instance).message;
  return warningEvent(id, {
    reason: QUARANTINED_EVENT_REASON,
    message,
    digestOf: `${id.uid}\nquarantined\n${state.until}`,
    now,
    instance,
  });
}

export interface QuarantineStatusOptions {
  quarantine: RuleQuarantine;
  store: RuleStore;
  /** Clock (tests). */
  now?: () => Date;
}

/**
 * Reports this replica's quarantines on the ModRules as the `quarantine` facet: Ready Degraded while one lasts,
 * with a Warning Event when it starts; the facet is cleared when it ends or the rule changes. Quarantine is per
 * replica: the reporter leaves another replica's Degraded condition alone until the time it names.
 */
export class QuarantineStatus {
  private status: StatusReporter | null = null;
  private readonly now: () => Date;
  private unsubscribe: () => void = () => undefined;

  constructor(private readonly options: QuarantineStatusOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Starts reporting through `status`. Straight to it, not through the operator's Ready gate: a quarantined rule
   * ran in the dragnet, so the registration already sends its objects.
   */
  attach(status: StatusReporter): void {
    this.status = status;
    const { quarantine, store } = this.options;
    const unsubscribe = quarantine.subscribe((change) => void this.changed(change));
    // Reading the size reconciles the quarantine with the store: a changed rule's quarantine ends (and its facet
    // clears) now, not at the next request that asks.
    const unwatch = store.onChange(() => void quarantine.size);
    this.unsubscribe = () => {
      unsubscribe();
      unwatch();
    };
  }

  /** Stops listening. */
  stop(): void {
    this.unsubscribe();
  }

  private async changed(change: QuarantineChange): Promise<void> {
    const status = this.status;
    if (!status || change.kind === 'offence') return;
    if (change.kind === 'released') {
      status.clear(change.rule.namespace, change.rule.name, 'quarantine');
      return;
    }
    const { namespace, name } = change.state.rule;
    status.set(namespace, name, 'quarantine', { ready: degradedVerdict(change.state, status.instance) });
    const id = status.identityOf(namespace, name);
    if (id) await status.postEvent(quarantineEvent(id, change.state, this.now(), status.instance));
  }
}
