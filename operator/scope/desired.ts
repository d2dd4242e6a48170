import { computeScope, Precision, PRECISIONS, RuleScopeReport, ScopeResult } from '../../scope/compute';
import { LiveScope } from '../../scope/ownership';
import { scopeHash } from '../../scope/entry';
import { Scope } from '../../scope/types';
import { CompiledRule } from '../../rule/compile';
import { ResourceCatalog } from '../../scope/catalog';

/** What the desired registration is computed from (ScopeControllerOptions' part). */
export interface DesiredScopeOptions {
  clusterNamespace: string;
  rules: () => readonly CompiledRule[];
  discovery: { catalog(): ResourceCatalog | null };
  onScope?: (reports: readonly RuleScopeReport[], narrowed: boolean) => void;
}

/** The registration to write, and what it was computed as. */
export interface Desired {
  registration: Scope;
  /** Null for the configured net (wide mode, or narrowing given up). */
  result: ScopeResult | null;
  /** The hash of the full-precision registration: the key under which a refusal steps its precision down. */
  full: string;
}

/**
 * The registration the rules in force need, at the precision the API server takes: the scope at its finest (native
 * rules' guards included), or at the coarser one it was left with when the API server refused that one (remembered
 * per registration). The regular writer and the admission's widener both compute it here, so a widening checks the
 * same guards.
 */
export class DesiredScope {
  private readonly refused = new Map<string, Precision>();

  constructor(private readonly options: DesiredScopeOptions) {}

  /** For the live registration's configured net; the configured net itself when `narrowing` is false. */
  compute(live: LiveScope, narrowing: boolean): Desired {
    if (!narrowing) return { registration: live.configured, result: null, full: scopeHash(live.configured) };
    const compute = (precision: Precision) => this.scope(live, precision);
    let result = compute(PRECISIONS[0]);
    const full = scopeHash(result.registration);
    const fallback = this.refused.get(full);
    if (fallback) result = compute(fallback);
    return { registration: result.registration, result, full };
  }

  /** The API server refused (or stored otherwise) the registration of `full`: next time, `next` precision. */
  private refuse(full: string, next: Precision): void {
    if (this.refused.size >= 100) this.refused.clear();
    this.refused.set(full, next);
  }

  /**
   * After the API server refused (or stored otherwise) the registration computed as `result` (`full` its key): the
   * next coarser precision, remembered for that registration, or null when none is left.
   */
  stepDown(full: string, result: ScopeResult | null): Precision | null {
    const at = result ? PRECISIONS.indexOf(result.precision) : PRECISIONS.length - 1;
    if (at >= PRECISIONS.length - 1) return null;
    this.refuse(full, PRECISIONS[at + 1]);
    return PRECISIONS[at + 1];
  }

  /** The per-rule reports to onScope: the computation's, or on the configured net one made for them alone. */
  report(result: ScopeResult | null, live: LiveScope): void {
    const { onScope } = this.options;
    if (!onScope) return;
    onScope(result?.rules ?? this.scope(live, 'resources').rules, result !== null);
  }

  private scope(live: LiveScope, precision: Precision): ScopeResult {
    return computeScope({
      rules: this.options.rules(),
      clusterNamespace: this.options.clusterNamespace,
      configured: live.configured,
      catalog: this.options.discovery.catalog(),
      precision,
    });
  }
}

/** Rules whose notes mention `text`, for the log: how many, and the first ten by name. */
function noted(result: ScopeResult | null, text: string, field: string): Record<string, unknown> {
  const rules = result
    ? result.rules.filter((r) => r.notes.some((n) => n.includes(text))).map((r) => r.rule)
    : [];
  return rules.length === 0 ? {} : { [field]: rules.length, [`${field}Rules`]: rules.slice(0, 10) };
}

/** What the log says of a registration written. */
export function writtenFields(registration: Scope, result: ScopeResult | null): Record<string, unknown> {
  return {
    webhookRules: registration.rules.length,
    resources: [...new Set(registration.rules.flatMap((r) => r.resources))].length,
    conditions: registration.matchConditions.length,
    selectorNames: result?.stats.selectorNames ?? 0,
    precision: result?.precision ?? 'configured',
    coarsened: result?.coarsened ?? [],
    ...noted(result, 'not served', 'unknownKinds'),
    ...noted(result, 'outside the configured net', 'outsideNet'),
  };
}
