import type { NamespaceSet, RuleReach } from './reach';

/** What the rules of one shape (scope/reach.ts) reach together: the union of their namespaces. */
export interface ShapeCover {
  readonly any: boolean;
  readonly names: ReadonlySet<string>;
  /** Each pattern as its regexes' sources joined by NUL (how the computation keys them). */
  readonly patterns: ReadonlySet<string>;
  readonly cluster: boolean;
}

/** The shapes of a computed scope's rules: a registration computed from them covers every rule that adds nothing. */
export type ScopeIndex = ReadonlyMap<string, ShapeCover>;

/** The key of a namespace pattern, as the computation groups them. */
export function patternKey(pattern: NamespaceSet['patterns'][number]): string {
  return pattern.map((r) => r.source).join('\u0000');
}

/** The index of the computation's shape groups. */
export function indexOf(
  groups: ReadonlyMap<
    string,
    { any: boolean; names: ReadonlySet<string>; patterns: ReadonlyMap<string, unknown>; cluster: boolean }
  >,
): ScopeIndex {
  const out = new Map<string, ShapeCover>();
  for (const [shape, g] of groups)
    out.set(shape, {
      any: g.any,
      names: new Set(g.names),
      patterns: new Set(g.patterns.keys()),
      cluster: g.cluster,
    });
  return out;
}

/**
 * Whether a rule with this reach would leave the registration computed from the indexed rules as it is: its shape is
 * there, and its namespaces and cluster reach are within that shape's (adding it changes no input of the
 * computation, which is deterministic). A cheap test for the common case: a rule like others already in force.
 */
export function addsNothing(index: ScopeIndex, reach: RuleReach): boolean {
  const g = index.get(reach.shape);
  if (!g) return false;
  if (reach.cluster && !g.cluster) return false;
  if (g.any) return true;
  const ns = reach.namespaces;
  if (ns.any) return false;
  for (const name of ns.names) if (!g.names.has(name)) return false;
  return ns.patterns.every((p) => g.patterns.has(patternKey(p)));
}
