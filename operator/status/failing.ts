import { Gauge, Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { objectKey, splitKey } from '../../util/meta';
import { RuleFailureRecord, RuleFailures } from '../../webhook/rule-failures';
import { warningEvent } from './events';
import { StatusReporter } from './reporter';
import { Facet, isoSeconds } from './facets';

// What a tenant sees of a rule that fails at run time (a template error, a bad value): the condition Failing on the
// rule (named first in Ready's message, Ready stays True: the rule is in force and applies where it does not fail),
// a Warning Event, and the gauge modrule_rules_failing. Per replica: each replica shows what it saw, and the
// reporter leaves another replica's condition alone until the time it names.

export const FAILING_REASON = 'RunTimeErrors';
export const FAILING_EVENT_REASON = 'ModRuleFailing';

/** "5m", "90s": a window as the message names it. */
function span(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/** The Failing facet of one rule's record on replica `instance`. */
export function failingFacet(record: RuleFailureRecord, windowMs: number, instance: string): Facet {
  const errors = `${record.count} error${record.count === 1 ? '' : 's'}`;
  return {
    condition: {
      type: 'Failing',
      reason: FAILING_REASON,
      message:
        `failing at run time: ${errors} in the last ${span(windowMs)} on replica ${instance}. ` +
        `Last at ${isoSeconds(record.lastAt)} on ${record.lastObject}: ${record.lastError}. ` +
        `The objects it fails on are admitted as if it did not match. Reported until ` +
        `${isoSeconds(record.lastAt + windowMs)} on replica ${instance} unless it fails again`,
    },
  };
}

export interface FailingStatusOptions {
  failures: RuleFailures;
  status: StatusReporter | null;
  registry?: Registry;
  /** How often records are read: updates, and conditions to clear; default 1 s. */
  sweepMs?: number;
  /** Least time between two updates of one rule's condition (its count moves with every error); default 10 s. */
  updateMs?: number;
  /** Least time between two Warning Events of one rule; default 10 minutes. */
  eventMs?: number;
  /** Wall clock (tests). */
  now?: () => number;
}

interface Shown {
  serial: number;
  at: number;
  eventAt: number;
}

/**
 * Turns this replica's record of run-time failures into the `failing` facet of each rule: set at once when a rule
 * starts failing, updated at most every `updateMs` while it fails, cleared once the window passed with no error
 * (or the rule changed); a Warning Event at most every `eventMs` per rule.
 */
export class FailingStatus {
  private readonly shown = new Map<string, Shown>();
  private readonly gauge: Gauge | null;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: FailingStatusOptions) {
    this.now = options.now ?? Date.now;
    this.gauge = options.registry
      ? new Gauge({
          name: 'modrule_rules_failing',
          help: 'ModRules whose Failing condition is True on this replica (run-time errors in the recent window).',
          registers: [options.registry],
        })
      : null;
    // Off the request path: the first failure is shown on the next turn of the event loop.
    this.unsubscribe = options.failures.onFirstFailure(() => setImmediate(() => this.sweep()));
  }

  start(): void {
    this.timer = setInterval(() => this.sweep(), this.options.sweepMs ?? 1_000);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe();
    if (this.timer) clearInterval(this.timer);
  }

  /** Reads the records: shows new and moved ones (rate-limited), clears those gone. */
  sweep(): void {
    const { failures, status } = this.options;
    const now = this.now();
    const current = new Set<string>();
    for (const record of failures.current()) {
      const { namespace, name } = record.rule;
      const key = objectKey(namespace, name);
      current.add(key);
      const shown = this.shown.get(key);
      const update =
        !shown || (shown.serial !== record.serial && now - shown.at >= (this.options.updateMs ?? 10_000));
      const eventDue = !shown || now - shown.eventAt >= (this.options.eventMs ?? 600_000);
      if (!update && !eventDue) continue;
      const facet = failingFacet(record, failures.windowMs, status?.instance ?? '');
      if (update) status?.set(namespace, name, 'failing', facet);
      // Not before the reporter knows the rule (a new rule's report waits for the registration): next sweep then.
      const posted = eventDue && this.event(record, facet, now);
      this.shown.set(key, {
        serial: update ? record.serial : shown!.serial,
        at: update ? now : shown!.at,
        eventAt: posted ? now : (shown?.eventAt ?? -Infinity),
      });
    }
    for (const key of this.shown.keys())
      if (!current.has(key)) {
        this.shown.delete(key);
        const { namespace, name } = splitKey(key);
        status?.clear(namespace, name, 'failing');
      }
    this.gauge?.set(this.shown.size);
  }

  /**
   * One Warning Event (sent in the background); its name hashes the rule, error and period, so replicas seeing the
   * same write it once. False when the rule's identity is not known yet.
   */
  private event(record: RuleFailureRecord, facet: Facet, now: number): boolean {
    const { status } = this.options;
    const id = status?.identityOf(record.rule.namespace, record.rule.name);
    if (!status || !id) return false;
    const period = Math.floor(now / (this.options.eventMs ?? 600_000));
    const event: JsonObject = warningEvent(id, {
      reason: FAILING_EVENT_REASON,
      message: facet.condition!.message,
      digestOf: `${id.uid}\nfailing\n${record.lastError}\n${period}`,
      now: new Date(now),
      instance: status.instance,
    });
    void status.postEvent(event);
    return true;
  }
}
