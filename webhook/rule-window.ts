import { CompiledRule } from '../rule/compile';
import { RuleStore } from '../store/rules';
import { RuleRef } from '../engine/admit';

// What happened to rules lately on this replica, counted over a sliding window of a few buckets with what the last
// occurrence said: recorded on the request path only when something happened (a request where nothing did costs
// nothing), read by the operator's status sources (operator/status/), which show it on the rule. Run-time failures
// (rule-failures.ts) and what Warn/DryRun rules would have done (rule-unenforced.ts) are two such records.

/** What a window holds of one rule: how often within the window, and when and on which object last. */
export interface WindowRecord {
  rule: RuleRef;
  /** Occurrences within the window ending now. */
  count: number;
  /** When the last one happened (ms since the epoch) and the object it happened on. */
  lastAt: number;
  lastObject: string;
  /** Grows with every occurrence recorded: what a reader has shown already. */
  serial: number;
}

export interface RuleWindowOptions {
  /** The window occurrences are counted over; default 5 minutes. */
  windowMs?: number;
  /** Wall clock in ms (tests); Date.now by default, since the last occurrence is shown as a time. */
  now?: () => number;
}

const BUCKETS = 10;

interface Entry<R extends WindowRecord> {
  record: R;
  /** The store's rule when it was first recorded: a changed rule starts with a clean record. */
  rule: CompiledRule | undefined;
  /** Occurrences per bucket, and which slot (time / bucket length) each bucket counts now. */
  counts: number[];
  slots: number[];
}

/** Per-rule records over a sliding window (per replica, in memory); subclasses say what a record adds. */
export abstract class RuleWindow<R extends WindowRecord> {
  readonly windowMs: number;
  private readonly bucketMs: number;
  protected readonly now: () => number;
  private readonly entries = new Map<string, Entry<R>>();
  private readonly listeners = new Set<(rule: RuleRef) => void>();
  private stale = false;
  private readonly unsubscribe: () => void;

  constructor(
    options: RuleWindowOptions = {},
    private readonly store?: RuleStore,
  ) {
    this.windowMs = options.windowMs ?? 5 * 60_000;
    this.bucketMs = this.windowMs / BUCKETS;
    this.now = options.now ?? Date.now;
    this.unsubscribe = store?.onChange(() => (this.stale = this.entries.size > 0)) ?? (() => undefined);
  }

  /** A record for a rule seen for the first time (count 0). */
  protected abstract fresh(rule: RuleRef): R;

  /**
   * Books one occurrence for `rule` at `now` on `object`; `update` writes what the record adds. O(1) for a rule
   * already on record.
   */
  protected book(rule: RuleRef, now: number, object: string, update: (record: R) => void): void {
    const slot = Math.floor(now / this.bucketMs);
    const key = `${rule.namespace}/${rule.name}`;
    let e = this.entries.get(key);
    const first = !e;
    if (!e) {
      e = {
        record: this.fresh(rule),
        rule: this.ruleOf(rule),
        counts: new Array<number>(BUCKETS).fill(0),
        slots: new Array<number>(BUCKETS).fill(-1),
      };
      this.entries.set(key, e);
    }
    const i = slot % BUCKETS;
    if (e.slots[i] !== slot) {
      e.slots[i] = slot;
      e.counts[i] = 0;
    }
    e.counts[i]++;
    const r = e.record;
    r.lastAt = now;
    r.lastObject = object;
    r.serial++;
    update(r);
    if (first) this.emit(rule);
  }

  /** Rules with an occurrence within the window, with their counts; forgets the others, and changed or deleted rules. */
  current(): R[] {
    this.reconcile();
    const slot = Math.floor(this.now() / this.bucketMs);
    const out: R[] = [];
    for (const [key, e] of this.entries) {
      let count = 0;
      for (let i = 0; i < BUCKETS; i++) if (e.slots[i] > slot - BUCKETS) count += e.counts[i];
      if (count === 0) this.entries.delete(key);
      else out.push({ ...e.record, count });
    }
    return out;
  }

  /** Calls `listener` when a rule with nothing on record gets a record; returns a function that unsubscribes it. */
  onFirst(listener: (rule: RuleRef) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Rules on record (tests). */
  get size(): number {
    return this.entries.size;
  }

  /** Stops following the store. */
  close(): void {
    this.unsubscribe();
    this.listeners.clear();
  }

  private ruleOf(ref: RuleRef): CompiledRule | undefined {
    return this.store
      ?.snapshot()
      .rulesFor(ref.namespace)
      .find((r) => r.namespace === ref.namespace && r.name === ref.name);
  }

  // Entries whose rule the store no longer holds as it was (changed, deleted, relisted) are forgotten.
  private reconcile(): void {
    if (!this.stale || !this.store) return;
    this.stale = false;
    for (const [key, e] of this.entries) if (this.ruleOf(e.record.rule) !== e.rule) this.entries.delete(key);
  }

  private emit(rule: RuleRef): void {
    for (const l of this.listeners) {
      try {
        l(rule);
      } catch {
        // A failing listener (status) must not break admissions.
      }
    }
  }
}
