import { Counter, Gauge, Registry } from 'prom-client';
import { Logger } from '../util/logger';
import { CompiledRule } from '../rule/compile';
import { RuleSnapshot, RuleStore } from '../store/rules';
import { AdmissionOutcome, QuarantineCheck, RuleRef } from '../engine/admit';

/** When a rule that keeps running out of its share of the request budget is set aside, and for how long. */
export interface QuarantineOptions {
  /** Runs out of its share within windowMs that quarantine a rule; default 3. */
  offences?: number;
  /** Default 60 s. */
  windowMs?: number;
  /** The first quarantine's length; it doubles with each quarantine in a row, up to maxCoolDownMs. Default 60 s. */
  coolDownMs?: number;
  /** Default 16 min. A rule quarantined again within this long of its release counts as "in a row". */
  maxCoolDownMs?: number;
  /** Wall clock in ms (tests); Date.now by default, since the end of a quarantine is shown as a time. */
  now?: () => number;
}

/** A rule's quarantine on this replica. */
export interface QuarantineState {
  rule: RuleRef;
  /** When it ends (ms since the epoch). */
  until: number;
  /** Runs out of its share that led to it, within the window. */
  offences: number;
  /** The last one's reason, e.g. "rule budget exhausted: more than 100000 evaluation steps (one rule's share)". */
  reason: string;
  /** The length of this quarantine. */
  coolDownMs: number;
}

/** What subscribers hear: a rule ran out of its share, was quarantined, or was released. */
export type QuarantineChange =
  | { kind: 'offence'; rule: RuleRef; reason: string }
  | { kind: 'quarantined'; state: QuarantineState }
  | { kind: 'released'; rule: RuleRef; why: 'cool-down over' | 'rule changed' };

interface Entry {
  rule: CompiledRule;
  /** Times of the offences within the window. */
  offences: number[];
  last: string;
  /** Quarantines in a row. */
  strikes: number;
  /** End of the quarantine, and its length; 0 while not quarantined. */
  until: number;
  coolDownMs: number;
  /** What the engine says of it while quarantined (made once: it is asked for every request). */
  note: string;
  releasedAt: number;
  timer?: NodeJS.Timeout;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * Rules set aside by themselves, per replica (in memory): a rule that runs out of its own share of the request
 * budget `offences` times within the window is quarantined for a cool-down. Meanwhile the engine skips it at once
 * (a Reject rule still rejects, without its rejectMessage) and every answer it would have taken part in carries a
 * warning. A changed rule (new spec), like a restart, starts with a clean record; a relist does not change a rule.
 */
export class RuleQuarantine {
  private readonly offences: number;
  private readonly windowMs: number;
  private readonly coolDownMs: number;
  private readonly maxCoolDownMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(change: QuarantineChange) => void>();
  private readonly check: QuarantineCheck = (rule) => this.reasonFor(rule);
  private quarantined = 0;
  // The store changed since the entries were last compared with its rules.
  private stale = false;
  private readonly unsubscribe: () => void;

  constructor(
    options: QuarantineOptions = {},
    private readonly store?: RuleStore,
  ) {
    this.offences = options.offences ?? 3;
    this.windowMs = options.windowMs ?? 60_000;
    this.coolDownMs = options.coolDownMs ?? 60_000;
    this.maxCoolDownMs = options.maxCoolDownMs ?? 960_000;
    this.now = options.now ?? Date.now;
    this.unsubscribe = store?.onChange(() => (this.stale = this.entries.size > 0)) ?? (() => undefined);
  }

  /** Rules quarantined right now. */
  get size(): number {
    this.reconcile();
    return this.quarantined;
  }

  /** The engine's check (AdmitOptions.quarantined), or undefined while no rule is quarantined. */
  gate(): QuarantineCheck | undefined {
    this.reconcile();
    return this.quarantined > 0 ? this.check : undefined;
  }

  /** The rule's quarantine on this replica, if it is quarantined. */
  stateOf(namespace: string, name: string): QuarantineState | undefined {
    this.reconcile();
    const e = this.entries.get(`${namespace}/${name}`);
    return e && e.until > 0 ? this.state(e) : undefined;
  }

  /** Calls `listener` on every offence, quarantine and release; returns a function that unsubscribes it. */
  subscribe(listener: (change: QuarantineChange) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Books the rules of one evaluation that ran out of their own share (`outcome.overBudget`, the rules as
   * `snapshot` held them); returns the quarantines this starts.
   */
  record(outcome: AdmissionOutcome, snapshot: RuleSnapshot): QuarantineState[] {
    if (outcome.overBudget.length === 0) return [];
    this.reconcile();
    const now = this.now();
    const started: QuarantineState[] = [];
    for (const ref of outcome.overBudget) {
      const rule = snapshot
        .rulesFor(ref.namespace)
        .find((r) => r.namespace === ref.namespace && r.name === ref.name);
      if (!rule) continue;
      const reason = outcome.failures.find(
        (f) => f.rule.namespace === ref.namespace && f.rule.name === ref.name,
      );
      const e = this.entryFor(rule);
      e.last = reason?.message ?? 'ran out of its share of the request budget';
      this.emit({ kind: 'offence', rule: ref, reason: e.last });
      // Already quarantined (a Reject rule still runs): its cool-down stands.
      if (e.until > 0) {
        e.note = this.note(e);
        continue;
      }
      e.offences = e.offences.filter((t) => now - t < this.windowMs);
      e.offences.push(now);
      if (e.offences.length >= this.offences) started.push(this.quarantine(e, now));
    }
    this.prune(now);
    return started;
  }

  /** Stops the timers and stops following the store. */
  close(): void {
    this.unsubscribe();
    for (const e of this.entries.values()) clearTimeout(e.timer);
  }

  private entryFor(rule: CompiledRule): Entry {
    let e = this.entries.get(rule.key);
    if (e && e.rule !== rule) {
      // The rule was changed (a new spec; a relist keeps an unchanged rule as it was): its record no longer applies.
      this.forget(e, 'rule changed');
      e = undefined;
    }
    if (!e) {
      e = {
        rule,
        offences: [],
        last: '',
        strikes: 0,
        until: 0,
        coolDownMs: 0,
        note: '',
        releasedAt: -Infinity,
      };
      this.entries.set(rule.key, e);
    }
    return e;
  }

  private quarantine(e: Entry, now: number): QuarantineState {
    e.strikes = now - e.releasedAt < this.maxCoolDownMs ? e.strikes + 1 : 1;
    const coolDown = Math.min(this.coolDownMs * 2 ** (e.strikes - 1), this.maxCoolDownMs);
    e.until = now + coolDown;
    e.coolDownMs = coolDown;
    e.note = this.note(e);
    this.quarantined++;
    e.timer = setTimeout(() => this.release(e, 'cool-down over'), coolDown);
    e.timer.unref();
    const state = this.state(e);
    this.emit({ kind: 'quarantined', state });
    return state;
  }

  private release(e: Entry, why: 'cool-down over' | 'rule changed'): void {
    if (e.until === 0) return;
    clearTimeout(e.timer);
    e.until = 0;
    e.offences = [];
    e.releasedAt = this.now();
    this.quarantined--;
    this.emit({ kind: 'released', rule: { namespace: e.rule.namespace, name: e.rule.name }, why });
  }

  private forget(e: Entry, why: 'rule changed'): void {
    this.release(e, why);
    this.entries.delete(e.rule.key);
  }

  // Asked for every candidate rule of a request while some rule is quarantined: one map lookup.
  private reasonFor(rule: CompiledRule): string | null {
    const e = this.entries.get(rule.key);
    if (!e || e.until === 0 || e.rule !== rule) return null;
    if (e.until <= this.now()) {
      // The timer is late (a busy event loop): the cool-down is over all the same.
      this.release(e, 'cool-down over');
      return null;
    }
    return e.note;
  }

  private note(e: Entry): string {
    return (
      `quarantined until ${iso(e.until)} on this replica: ran out of its share of the request budget ` +
      `${this.offences} times within ${this.windowMs / 1000} s (last: ${e.last})`
    );
  }

  // Entries whose rule the store no longer holds as it was (changed, deleted) are forgotten.
  private reconcile(): void {
    if (!this.stale || !this.store) return;
    this.stale = false;
    const snapshot = this.store.snapshot();
    for (const e of [...this.entries.values()]) {
      const current = snapshot.rulesFor(e.rule.namespace).find((r) => r.key === e.rule.key);
      if (current !== e.rule) this.forget(e, 'rule changed');
    }
  }

  // Records with nothing left to remember: not quarantined, no recent offence, not released recently.
  private prune(now: number): void {
    for (const [key, e] of this.entries) {
      if (e.until > 0 || now - e.releasedAt < this.maxCoolDownMs) continue;
      if (e.offences.every((t) => now - t >= this.windowMs)) this.entries.delete(key);
    }
  }

  private state(e: Entry): QuarantineState {
    return {
      rule: { namespace: e.rule.namespace, name: e.rule.name },
      until: e.until,
      offences: e.offences.length,
      reason: e.last,
      coolDownMs: e.coolDownMs,
    };
  }

  private emit(change: QuarantineChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        // A failing listener (metrics, status) must not break admissions.
      }
    }
  }
}

/**
 * Logs and counts what the quarantine does: `modrule_rule_budget_exhausted_total{namespace,name}` per run out of a
 * rule's share, `modrule_rule_quarantines_total{namespace,name}` per quarantine, `modrule_quarantined_rules` now.
 * Returns a function that stops.
 */
export function watchQuarantine(quarantine: RuleQuarantine, registry: Registry, logger: Logger): () => void {
  const offences = new Counter({
    name: 'modrule_rule_budget_exhausted_total',
    help: 'Evaluations in which a ModRule ran out of its own share of the request budget and failed alone, per ModRule.',
    labelNames: ['namespace', 'name'],
    registers: [registry],
  });
  const quarantines = new Counter({
    name: 'modrule_rule_quarantines_total',
    help: 'ModRules quarantined (skipped for a cool-down) for running out of their share repeatedly, per ModRule.',
    labelNames: ['namespace', 'name'],
    registers: [registry],
  });
  new Gauge({
    name: 'modrule_quarantined_rules',
    help: 'ModRules quarantined on this replica right now.',
    registers: [registry],
    collect() {
      this.set(quarantine.size);
    },
  });
  return quarantine.subscribe((change) => {
    switch (change.kind) {
      case 'offence':
        offences.inc({ ...change.rule });
        return;
      case 'quarantined': {
        const { rule, until, offences: count, reason, coolDownMs } = change.state;
        quarantines.inc({ ...rule });
        logger.warn('ModRule quarantined: it keeps running out of its share of the request budget', {
          rule,
          until: iso(until),
          seconds: Math.round(coolDownMs / 1000),
          offences: count,
          reason,
        });
        return;
      }
      case 'released':
        logger.info('ModRule quarantine ended', { rule: change.rule, why: change.why });
    }
  });
}
