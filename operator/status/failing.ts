import { RuleFailureRecord, RuleFailures } from '../../webhook/rule-failures';
import { Facet, isoSeconds } from './facets';
import { span, WindowFacetSpec, WindowStatus, WindowTimings } from './window-status';

// What a tenant sees of a rule that fails at run time (a template error, a bad value): the condition Failing on the
// rule (named first in Ready's message, Ready stays True: the rule is in force and applies where it does not fail),
// a Warning Event, and the gauge modrule_rules_failing. Per replica (window-status.ts).

export const FAILING_REASON = 'RunTimeErrors';
export const FAILING_EVENT_REASON = 'ModRuleFailing';

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

const FAILING: WindowFacetSpec<RuleFailureRecord> = {
  source: 'failing',
  facetOf: failingFacet,
  event: { reason: () => FAILING_EVENT_REASON, digest: (r) => r.lastError },
  gauge: {
    name: 'modrule_rules_failing',
    help: 'ModRules whose Failing condition is True on this replica (run-time errors in the recent window).',
  },
};

export interface FailingStatusOptions extends WindowTimings {
  failures: RuleFailures;
}

/**
 * Turns this replica's record of run-time failures into the `failing` facet of each rule: set at once when a rule
 * starts failing, updated at most every `updateMs` while it fails, cleared once the window passed with no error
 * (or the rule changed); a Warning Event at most every `eventMs` per rule.
 */
export class FailingStatus extends WindowStatus<RuleFailureRecord> {
  constructor({ failures, ...options }: FailingStatusOptions) {
    super({ ...options, window: failures, spec: FAILING });
  }
}
