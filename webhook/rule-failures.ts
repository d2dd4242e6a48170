import { CompiledRule } from '../rule/compile';
import { RuleStore } from '../store/rules';
import { AdmissionOutcome, RuleRef } from '../engine/admit';

// Which rules failed at run time on this replica lately: counted over a sliding window of a few buckets, with the
// last error and the object it failed on. Recorded on the request path only when a rule failed (a request where
// none failed costs nothing); read by the operator (operator/status/failing.ts), which shows it on the rule.

/** How a rule failed lately, on this replica. */
export interface RuleFailureRecord {
  rule: RuleRef;
  /** Errors within the window ending now. */
  count: number;
  /** When the last one happened (ms since the epoch), its message, and the object it failed on. */
  lastAt: number;
  lastError: string;
  lastObject: string;
  /** Grows with every error recorded: what a reader has shown already. */
  serial: number;
}

export interface RuleFailuresOptions {
  /** The window errors are counted over; default 5 minutes. */
  windowMs?: number;
  /** Wall clock in ms (tests); Date.now by default, since the last error is shown as a time. */
  now?: () => number;
}

const BUCKETS = 10;
/** Longest error message kept: enough to read, bounded whatever a template prints. */
const MAX_ERROR = 1000;

interface Entry {
  record: RuleFailureRecord;
  /** The store's rule when it first failed: a changed rule starts with a clean record. */
  rule: CompiledRule | undefined;
  /** Errors per bucket, and which slot (time / bucket length) each bucket counts now. */
  counts: number[];
  slots: number[];
}

/** Per-rule run-time failures over a sliding window (per replica, in memory). */
export class RuleFailures {
  readonly windowMs: number;
  private readonly bucketMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(rule: RuleRef) => void>();
  private stale = false;
  private readonly unsubscribe: () => void;

  constructor(
    options: RuleFailuresOptions = {},
    private readonly store?: RuleStore,
  ) {
    this.windowMs = options.windowMs ?? 5 * 60_000;
    this.bucketMs = this.windowMs / BUCKETS;
    this.now = options.now ?? Date.now;
    this.unsubscribe = store?.onChange(() => (this.stale = this.entries.size > 0)) ?? (() => undefined);
  }

  /**
   * Books the failures of one evaluation (`outcome.failures`, non-empty) on the object `objectOf()` names: O(1) per
   * failure for a rule already failing.
   */
  record(failures: AdmissionOutcome['failures'], objectOf: () => string): void {
    const now = this.now();
    const slot = Math.floor(now / this.bucketMs);
    const object = objectOf();
    for (const f of failures) {
      const key = `${f.rule.namespace}/${f.rule.name}`;
      let e = this.entries.get(key);
      const first = !e;
      if (!e) {
        e = {
          record: { rule: f.rule, count: 0, lastAt: 0, lastError: '', lastObject: '', serial: 0 },
          rule: this.ruleOf(f.rule),
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
      r.lastError = f.message.length > MAX_ERROR ? `${f.message.slice(0, MAX_ERROR - 3)}...` : f.message;
      r.lastObject = object;
      r.serial++;
      if (first) this.emit(f.rule);
    }
  }

  /** Rules with an error within the window, with their counts; forgets the others, and changed or deleted rules. */
  current(): RuleFailureRecord[] {
    this.reconcile();
    const slot = Math.floor(this.now() / this.bucketMs);
    const out: RuleFailureRecord[] = [];
    for (const [key, e] of this.entries) {
      let count = 0;
      for (let i = 0; i < BUCKETS; i++) if (e.slots[i] > slot - BUCKETS) count += e.counts[i];
      if (count === 0) this.entries.delete(key);
      else out.push({ ...e.record, count });
    }
    return out;
  }

  /** Calls `listener` when a rule that had no failure on record fails; returns a function that unsubscribes it. */
  onFirstFailure(listener: (rule: RuleRef) => void): () => void {
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

  // Entries whose rule the store no longer holds as it was (changed, deleted) are forgotten.
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
