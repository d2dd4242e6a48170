import { AdmissionOutcome, RuleRef } from '../engine/admit';
import { unenforcedSummary } from '../engine/unenforced';
import { truncate } from './answer';
import { RuleWindow, RuleWindowOptions, WindowRecord } from './rule-window';

// What Warn and DryRun rules (spec.enforcementAction) would have done on this replica lately (rule-window.ts): how
// many objects each would have patched or rejected, and the last one; read by the operator
// (operator/status/unenforced.ts), which shows it on the rule.

/** What a Warn/DryRun rule would have done lately, on this replica. */
export interface UnenforcedRecord extends WindowRecord {
  action: 'Warn' | 'DryRun';
  /** What it would have done to the last object: patched or rejected it. */
  lastEffect: 'patch' | 'reject';
  /** The last would-be patch's paths, or the rejection message (engine/unenforced.ts, unenforcedSummary). */
  lastSummary: string;
}

/** Longest summary kept. */
const MAX_SUMMARY = 1000;

/** Per-rule would-be patches and rejections of Warn/DryRun rules over a sliding window (per replica, in memory). */
export class RuleUnenforced extends RuleWindow<UnenforcedRecord> {
  /** Books what one evaluation's Warn/DryRun rules would have done (`outcome.unenforced`, non-empty). */
  record(unenforced: AdmissionOutcome['unenforced'], objectOf: () => string): void {
    const now = this.now();
    const object = objectOf();
    for (const u of unenforced)
      this.book(u.rule, now, object, (r) => {
        r.action = u.action;
        r.lastEffect = u.effect;
        r.lastSummary = truncate(unenforcedSummary(u), MAX_SUMMARY);
      });
  }

  protected fresh(rule: RuleRef): UnenforcedRecord {
    return {
      rule,
      count: 0,
      lastAt: 0,
      lastObject: '',
      serial: 0,
      action: 'DryRun',
      lastEffect: 'patch',
      lastSummary: '',
    };
  }
}

export type { RuleWindowOptions as RuleUnenforcedOptions };
