import type { NamespaceSet, RuleReach } from './reach';

/** What the rules of one shape (scope/reach.ts) reach together: the union of their namespaces. */
export interface ShapeCover {
  readonly any: boolean;
  readonly names: ReadonlySet<string>;
  /** Each pattern as its regexes' sources joined by NUL (how the computation keys them). */
  readonly patterns: ReadonlySet<string>;
  readonly cluster: boolean;
}

/**
 * The shape groups of a computed scope's rules, by shape, then by decline (the CEL of a native rule's guards that
 * sends its objects to the webhook, '' for rules that need every object): a registration computed from them covers
 * every rule that adds nothing.
 */
export type ScopeIndex = ReadonlyMap<string, ReadonlyMap<string, ShapeCover>>;

/** The key of a namespace pattern, as the computation groups them. */
export function patternKey(pattern: NamespaceSet['patterns'][number]): string {
  return pattern.map((r) => r.source).join('\u0000');
}

type Group = {
  any: boolean;
  names: ReadonlySet<string>;
  patterns: ReadonlyMap<string, unknown>;
  cluster: boolean;
};

/** The index of the computation's shape groups (by shape, then by decline). */
export function indexOf(groups: ReadonlyMap<string, ReadonlyMap<string, Group>>): ScopeIndex {
  const out = new Map<string, Map<string, ShapeCover>>();
  for (const [shape, byDecline] of groups) {
    const covers = new Map<string, ShapeCover>();
    for (const [decline, g] of byDecline)
      covers.set(decline, {
        any: g.any,
        names: new Set(g.names),
        patterns: new Set(g.patterns.keys()),
        cluster: g.cluster,
      });
    out.set(shape, covers);
  }
  return out;
}

/**
 * Whether a rule with this reach (and `decline`: '' when it needs every object, as a rule not served natively does)
 * would leave the registration computed from the indexed rules as it is: its shape and decline are there, and its
 * namespaces and cluster reach are within that group's (adding it changes no input of the computation, which is
 * deterministic). A cheap test for the common case: a rule like others already in force. Rules of the same shape
 * with another decline do not count: a native rule's objects reach the webhook only where its guards decline, which
 * does not send a rule that needs every object.
 */
export function addsNothing(index: ScopeIndex, reach: RuleReach, decline = ''): boolean {
  const g = index.get(reach.shape)?.get(decline);
  if (!g) return false;
  if (reach.cluster && !g.cluster) return false;
  if (g.any) return true;
  const ns = reach.namespaces;
  if (ns.any) return false;
  for (const name of ns.names) if (!g.names.has(name)) return false;
  return ns.patterns.every((p) => g.patterns.has(patternKey(p)));
}
