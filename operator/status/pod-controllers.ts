import { splitKey } from '../../util/meta';
import { RuleScopeReport } from '../../scope/compute';
import { StatusFacets } from './facets';

// status.podControllers: the controller kinds whose pod templates a Pod rule reaches (spec.podControllers), from the
// dragnet scope's reports, as the scope findings (operator/scope/findings.ts) are fed: a variant whose resources the
// registration sends reaches its controller; one outside the configured net does not (its OutsideNet says why).

/** Keeps every rule's podControllers facet in step with the scope's reports. */
export class PodControllersFacet {
  private readonly shown = new Map<string, string>();

  constructor(private readonly status: StatusFacets | null) {}

  /** Takes one scope computation's reports: sets the kinds of rules that reach controllers, clears the others'. */
  update(reports: readonly RuleScopeReport[]): void {
    const reached = new Map<string, string[]>();
    for (const r of reports)
      if (r.controller && r.resources.length > 0)
        reached.set(r.rule, [...(reached.get(r.rule) ?? []), r.controller]);
    for (const [rule, kinds] of reached) {
      const text = kinds.join(',');
      if (this.shown.get(rule) === text) continue;
      const { namespace, name } = splitKey(rule);
      this.status?.set(namespace, name, 'podControllers', { podControllers: kinds });
      this.shown.set(rule, text);
    }
    for (const rule of [...this.shown.keys()])
      if (!reached.has(rule)) {
        const { namespace, name } = splitKey(rule);
        this.status?.clear(namespace, name, 'podControllers');
        this.shown.delete(rule);
      }
  }
}
