import { Gauge, Registry } from 'prom-client';
import { splitKey } from '../../util/meta';
import { RuleScopeReport } from '../../scope/compute';
import { describeUnserved } from '../../scope/unserved';
import { Facet, FacetSource, StatusFacets } from '../status/facets';

// What the scope computation finds about a rule, on its status and in a gauge: kinds the cluster does not serve
// (condition UnknownKind, gauge modrule_rules_unknown_kind; scope/unserved.ts), and served kinds the configured
// net leaves out (condition OutsideNet, gauge modrule_rules_outside_net; scope/products.ts). The finding is the scope's own, per
// rule in its report: one analysis decides both the net and what the rule says about it.

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

export const OUTSIDE_NET_REASON = 'OutsideConfiguredNet';

/** How the status and the apply warning name kinds the configured net leaves out, and whose objects they are. */
export function outsideNetPhrase(kinds: readonly string[]): { head: string; objects: string } {
  return {
    head: `kind ${kinds.join(', ')} is outside the dragnet's configured net`,
    objects: kinds.length === 1 ? 'its objects' : 'their objects',
  };
}

/**
 * The OutsideNet facet of one rule, or undefined when the configured net sends every served kind it names: the API
 * server never calls the webhook for the others, so the rule would miss all their objects without a word.
 */
export function outsideNetFacet(report: RuleScopeReport): Facet | undefined {
  if (report.outside.length === 0) return undefined;
  const { head, objects } = outsideNetPhrase(report.outside);
  return {
    condition: {
      type: 'OutsideNet',
      reason: OUTSIDE_NET_REASON,
      message:
        `${head}. The API server never sends the webhook ${objects} (the dragnet MutatingWebhookConfiguration as ` +
        `installed leaves ${report.outside.length === 1 ? 'it' : 'them'} out), so the rule acts on none of them; ` +
        "add its resource to the configured net's rules to bring it in (docs/install.md, Target resources).",
    },
  };
}

/** What a finding is called on the status, in its Warning Event and in metrics. */
export interface FindingSpec {
  source: FacetSource;
  /** The reason of the Warning Event on a rule the finding starts to hold for (once per rule and message). */
  eventReason: string;
  /** The rule's facet, or undefined when the finding does not hold for it. */
  facetOf: (report: RuleScopeReport, narrowed: boolean) => Facet | undefined;
  gauge: { name: string; help: string };
}

/** The UnknownKind finding. */
export const UNKNOWN_KIND: FindingSpec = {
  source: 'unknownKind',
  eventReason: 'ModRuleKindNotServed',
  facetOf: unknownKindFacet,
  gauge: {
    name: 'modrule_rules_unknown_kind',
    help: 'Valid ModRules naming a kind the cluster does not serve (condition UnknownKind).',
  },
};

/** The OutsideNet finding. */
export const OUTSIDE_NET: FindingSpec = {
  source: 'outsideNet',
  eventReason: 'ModRuleOutsideNet',
  facetOf: outsideNetFacet,
  gauge: {
    name: 'modrule_rules_outside_net',
    help: "Valid ModRules naming a served kind the dragnet's configured net never sends (condition OutsideNet).",
  },
};

/** Where a finding's Warning Events go: StatusReporter.warnNamed. */
export interface RuleWarnings {
  /** False while the rule is not known yet (the finding tries again at the next computation). */
  warnNamed(namespace: string, name: string, reason: string, message: string): boolean;
}

/**
 * Keeps one finding's facet of every rule in step with the scope's reports, warns once per rule and message with an
 * Event, and counts the rules it holds for.
 */
export class ScopeFinding {
  /** Rules the finding holds for now, with the message their Event carried ('' until one was sent). */
  private readonly flagged = new Map<string, string>();
  private readonly gauge: Gauge | null;

  constructor(
    private readonly spec: FindingSpec,
    private readonly status: (StatusFacets & RuleWarnings) | null,
    registry?: Registry,
  ) {
    this.gauge = registry ? new Gauge({ ...spec.gauge, registers: [registry] }) : null;
  }

  /** Takes one scope computation's reports: sets the facet of rules it holds for, clears the others'. */
  update(reports: readonly RuleScopeReport[], narrowed: boolean): void {
    const now = new Map<string, string>();
    for (const report of reports) {
      const facet = this.spec.facetOf(report, narrowed);
      if (!facet) continue;
      const { namespace, name } = splitKey(report.rule);
      this.status?.set(namespace, name, this.spec.source, facet);
      const message = facet.condition?.message ?? '';
      const warned = this.flagged.get(report.rule) === message;
      now.set(
        report.rule,
        warned || this.status?.warnNamed(namespace, name, this.spec.eventReason, message) ? message : '',
      );
    }
    for (const key of this.flagged.keys())
      if (!now.has(key)) {
        const { namespace, name } = splitKey(key);
        this.status?.clear(namespace, name, this.spec.source);
      }
    this.flagged.clear();
    for (const [key, message] of now) this.flagged.set(key, message);
    this.gauge?.set(now.size);
  }

  /** Rules flagged now (tests). */
  get size(): number {
    return this.flagged.size;
  }
}
