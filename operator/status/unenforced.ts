import { RuleUnenforced, UnenforcedRecord } from '../../webhook/rule-unenforced';
import { Facet, isoSeconds } from './facets';
import { span, WindowFacetSpec, WindowStatus, WindowTimings } from './window-status';

// What a platform team sees of a rule in Warn or DryRun (spec.enforcementAction) while it would act: the condition
// NotEnforced on the rule with how many objects it would have patched or rejected in the recent window and the last
// one (named in Ready's message; Ready stays True), a Warning Event at most every ten minutes, and the gauge
// modrule_rules_not_enforced. Per replica (window-status.ts); the per-rule counters are the webhook's.

export const WOULD_PATCH_EVENT_REASON = 'ModRuleWouldPatch';
export const WOULD_REJECT_EVENT_REASON = 'ModRuleWouldReject';

/** The NotEnforced facet of one rule's record on replica `instance`. */
export function unenforcedFacet(record: UnenforcedRecord, windowMs: number, instance: string): Facet {
  const objects = `${record.count} object${record.count === 1 ? '' : 's'}`;
  const verb = record.lastEffect === 'patch' ? 'patched' : 'rejected';
  const admitted = record.lastEffect === 'patch' ? 'admitted unpatched' : 'admitted';
  return {
    condition: {
      type: 'NotEnforced',
      reason: record.action,
      message:
        `${record.action}: would have ${verb} ${objects} in the last ${span(windowMs)} on replica ${instance} ` +
        `(${admitted}). Last at ${isoSeconds(record.lastAt)} on ${record.lastObject}: ${record.lastSummary}. ` +
        `Set spec.enforcementAction to Enforce to enforce it. Reported until ` +
        `${isoSeconds(record.lastAt + windowMs)} on replica ${instance} unless it matches again`,
    },
  };
}

const UNENFORCED: WindowFacetSpec<UnenforcedRecord> = {
  source: 'unenforced',
  facetOf: unenforcedFacet,
  event: {
    reason: (r) => (r.lastEffect === 'patch' ? WOULD_PATCH_EVENT_REASON : WOULD_REJECT_EVENT_REASON),
    digest: (r) => r.action,
  },
  gauge: {
    name: 'modrule_rules_not_enforced',
    help:
      'Warn/DryRun ModRules whose NotEnforced condition is True on this replica (objects they would have ' +
      'patched or rejected in the recent window).',
  },
};

export interface UnenforcedStatusOptions extends WindowTimings {
  unenforced: RuleUnenforced;
}

/** Turns this replica's record of what Warn/DryRun rules would have done into the `unenforced` facet of each rule. */
export class UnenforcedStatus extends WindowStatus<UnenforcedRecord> {
  constructor({ unenforced, ...options }: UnenforcedStatusOptions) {
    super({ ...options, window: unenforced, spec: UNENFORCED });
  }
}
