import { AdmissionOutcome, RuleRef } from '../engine/admit';
import { truncate } from './answer';
import { RuleWindow, RuleWindowOptions, WindowRecord } from './rule-window';

// Which rules failed at run time on this replica lately (rule-window.ts), with the last error and the object it
// failed on; read by the operator (operator/status/failing.ts), which shows it on the rule.

/** How a rule failed lately, on this replica. */
export interface RuleFailureRecord extends WindowRecord {
  /** The last error's message. */
  lastError: string;
}

export type RuleFailuresOptions = RuleWindowOptions;

/** Longest error message kept: enough to read, bounded whatever a template prints. */
const MAX_ERROR = 1000;

/** Per-rule run-time failures over a sliding window (per replica, in memory). */
export class RuleFailures extends RuleWindow<RuleFailureRecord> {
  /**
   * Books the failures of one evaluation (`outcome.failures`, non-empty) on the object `objectOf()` names: O(1) per
   * failure for a rule already failing.
   */
  record(failures: AdmissionOutcome['failures'], objectOf: () => string): void {
    const now = this.now();
    const object = objectOf();
    for (const f of failures)
      this.book(f.rule, now, object, (r) => (r.lastError = truncate(f.message, MAX_ERROR)));
  }

  /** Calls `listener` when a rule that had no failure on record fails; returns a function that unsubscribes it. */
  onFirstFailure(listener: (rule: RuleRef) => void): () => void {
    return this.onFirst(listener);
  }

  protected fresh(rule: RuleRef): RuleFailureRecord {
    return { rule, count: 0, lastAt: 0, lastError: '', lastObject: '', serial: 0 };
  }
}
