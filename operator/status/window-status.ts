import { Gauge, Registry } from 'prom-client';
import { objectKey, splitKey } from '../../util/meta';
import { RuleWindow, WindowRecord } from '../../webhook/rule-window';
import { warningEvent } from './events';
import { StatusReporter } from './reporter';
import { Facet, FacetSource } from './facets';

// A facet fed by one of the webhook's per-rule windows (webhook/rule-window.ts): set at once when a rule gets a
// record, updated at most every `updateMs` while it keeps getting new ones, cleared once the window passed with
// none (or the rule changed); a Warning Event at most every `eventMs` per rule. Per replica: each replica shows
// what it saw, and the reporter leaves another replica's condition alone until the time it names. Run-time failures
// (failing.ts) and what Warn/DryRun rules would have done (unenforced.ts) are shown so.

/** "5m", "90s": a window as the message names it. */
export function span(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

/** What a window's facet says, and the Event it sends. */
export interface WindowFacetSpec<R extends WindowRecord> {
  source: FacetSource;
  /** The facet of one rule's record on replica `instance`. */
  facetOf(record: R, windowMs: number, instance: string): Facet;
  /** The Event's reason, and what its name hashes besides the rule and the period (replicas write one). */
  event: { reason(record: R): string; digest(record: R): string };
  /** The gauge of the rules the facet is shown on (registered when a registry is given). */
  gauge: { name: string; help: string };
}

/** What every window's status source is given: where it writes, and how often. */
export interface WindowTimings {
  status: StatusReporter | null;
  registry?: Registry;
  /** How often records are read: updates, and conditions to clear; default 1 s. */
  sweepMs?: number;
  /** Least time between two updates of one rule's condition (its count moves with every record); default 10 s. */
  updateMs?: number;
  /** Least time between two Events of one rule; default 10 minutes. */
  eventMs?: number;
  /** Wall clock (tests). */
  now?: () => number;
}

export interface WindowStatusOptions<R extends WindowRecord> extends WindowTimings {
  window: RuleWindow<R>;
  spec: WindowFacetSpec<R>;
}

interface Shown {
  serial: number;
  at: number;
  eventAt: number;
}

/** Turns a window's records into a facet of each rule (rate-limited), with its Events and gauge. */
export class WindowStatus<R extends WindowRecord> {
  private readonly shown = new Map<string, Shown>();
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private readonly unsubscribe: () => void;
  private readonly gauge: Gauge | null;

  constructor(private readonly options: WindowStatusOptions<R>) {
    this.now = options.now ?? Date.now;
    const { registry, spec } = options;
    this.gauge = registry ? new Gauge({ ...spec.gauge, registers: [registry] }) : null;
    // Off the request path: the first record is shown on the next turn of the event loop.
    this.unsubscribe = options.window.onFirst(() => setImmediate(() => this.sweep()));
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
    const { window, status, spec } = this.options;
    const now = this.now();
    const current = new Set<string>();
    for (const record of window.current()) {
      const { namespace, name } = record.rule;
      const key = objectKey(namespace, name);
      current.add(key);
      const shown = this.shown.get(key);
      const update =
        !shown || (shown.serial !== record.serial && now - shown.at >= (this.options.updateMs ?? 10_000));
      const eventDue = !shown || now - shown.eventAt >= (this.options.eventMs ?? 600_000);
      if (!update && !eventDue) continue;
      const facet = spec.facetOf(record, window.windowMs, status?.instance ?? '');
      if (update) status?.set(namespace, name, spec.source, facet);
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
        status?.clear(namespace, name, spec.source);
      }
    this.gauge?.set(this.shown.size);
  }

  /**
   * One Warning Event (sent in the background); its name hashes the rule, the spec's digest and the period, so
   * replicas seeing the same write it once. False when the rule's identity is not known yet.
   */
  private event(record: R, facet: Facet, now: number): boolean {
    const { status, spec } = this.options;
    const id = status?.identityOf(record.rule.namespace, record.rule.name);
    if (!status || !id) return false;
    const period = Math.floor(now / (this.options.eventMs ?? 600_000));
    void status.postEvent(
      warningEvent(id, {
        reason: spec.event.reason(record),
        message: facet.condition!.message,
        digestOf: `${id.uid}\n${spec.source}\n${spec.event.digest(record)}\n${period}`,
        now: new Date(now),
        instance: status.instance,
      }),
    );
    return true;
  }
}
