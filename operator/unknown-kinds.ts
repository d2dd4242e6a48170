import { Gauge, Registry } from 'prom-client';
import { splitKey } from '../util/meta';
import { RuleScopeReport } from '../scope/compute';
import { describeUnserved } from '../scope/unserved';
import { Facet, StatusFacets } from './status-facets';

// Kinds a rule names that the cluster does not serve, on the rule's status (condition UnknownKind) and in the
// gauge modrule_rules_unknown_kind. The finding is the scope computation's (scope/unserved.ts, per rule in its
// report): one analysis decides both the net and what the rule says about it.

export const UNKNOWN_KIND_REASON = 'KindNotServed';

/** Where the net fails wide for the rule: "namespace team", "every namespace", "... and cluster-scoped resources". */
function netOf(report: RuleScopeReport): string {
  const namespaced =
    report.namespaces === '*'
      ? 'every namespace'
      : report.namespaces === '-'
        ? ''
        : `namespace ${report.namespaces}`;
  const cluster = report.cluster ? 'cluster-scoped resources' : '';
  return [namespaced, cluster].filter(Boolean).join(' and ') || 'nothing';
}

/**
 * The UnknownKind facet of one rule, or undefined when it names no kind the cluster does not serve. `narrowed`:
 * the registration follows the rules (else it is the configured net, and nothing widens).
 */
export function unknownKindFacet(report: RuleScopeReport, narrowed: boolean): Facet | undefined {
  if (report.unserved.length === 0) return undefined;
  const summary = report.unserved.map((u) => describeUnserved(u)).join(', ');
  const net = narrowed
    ? `the dragnet's registration sends the webhook every resource of ${netOf(report)} for it, so that a ` +
      `CustomResourceDefinition installed later is covered at once`
    : `the dragnet's registration is the configured net either way`;
  return {
    condition: {
      type: 'UnknownKind',
      reason: UNKNOWN_KIND_REASON,
      message: `${summary}. Until it is, the rule matches no object of it, and ${net}.`,
    },
  };
}

/** Keeps the UnknownKind facet of every rule in step with the scope's reports. */
export class UnknownKinds {
  private readonly flagged = new Set<string>();
  private readonly gauge: Gauge | null;

  constructor(
    private readonly status: StatusFacets | null,
    registry?: Registry,
  ) {
    this.gauge = registry
      ? new Gauge({
          name: 'modrule_rules_unknown_kind',
          help: 'Valid ModRules naming a kind the cluster does not serve (condition UnknownKind).',
          registers: [registry],
        })
      : null;
  }

  /** Takes one scope computation's reports: sets the facet of rules naming unserved kinds, clears the others'. */
  update(reports: readonly RuleScopeReport[], narrowed: boolean): void {
    const now = new Set<string>();
    for (const report of reports) {
      const facet = unknownKindFacet(report, narrowed);
      if (!facet) continue;
      now.add(report.rule);
      const { namespace, name } = splitKey(report.rule);
      this.status?.set(namespace, name, 'unknownKind', facet);
    }
    for (const key of this.flagged)
      if (!now.has(key)) {
        const { namespace, name } = splitKey(key);
        this.status?.clear(namespace, name, 'unknownKind');
      }
    this.flagged.clear();
    for (const key of now) this.flagged.add(key);
    this.gauge?.set(now.size);
  }

  /** Rules flagged now (tests). */
  get size(): number {
    return this.flagged.size;
  }
}
