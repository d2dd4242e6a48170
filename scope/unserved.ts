import { closest } from '../util/suggest';
import { CompiledRule } from '../rule/compile';
import { ResourceCatalog } from './catalog';
import { itemPin } from '../rule/pins';
import { RuleReach, ruleReach } from './reach';
import { ServedResource } from './types';

// Kinds a rule names that the cluster does not serve: the rule matches no object of them, and the scope fails wide
// for them (scope/products.ts) so that a CRD installed later is covered at once. Said on the rule's status, in
// `kubectl apply`'s warnings and by `modrule validate`, each with the served kind it is likely a misspelling of.

/** A kind a rule pins that the catalog does not serve in the API groups the rule pins. */
export interface UnservedKind {
  kind: string;
  /** The API groups ('' = core) the rule pins; null: any. */
  groups: readonly string[] | null;
  /** Groups that serve the kind after all (the rule pins other ones). */
  servedIn: readonly string[];
  /** The served kind it is probably a misspelling of. */
  suggestion?: string;
}

/** The resources that serve `kind` in `groups` (null: any group). */
export function servedResources(
  kind: string,
  groups: ReadonlySet<string> | null,
  catalog: ResourceCatalog,
): readonly ServedResource[] {
  const all = catalog.resourcesOf(kind);
  return groups ? all.filter((r) => groups.has(r.group)) : all;
}

/** One kind `servedResources` found nothing for: where it is served instead, or what it may be a misspelling of. */
export function unservedKind(
  kind: string,
  groups: ReadonlySet<string> | null,
  catalog: ResourceCatalog,
): UnservedKind {
  const servedIn = [...new Set(catalog.resourcesOf(kind).map((r) => r.group))].sort();
  const base = { kind, groups: groups ? [...groups].sort() : null, servedIn };
  const suggestion = servedIn.length > 0 ? undefined : closest(kind, catalog.kinds());
  return suggestion ? { ...base, suggestion } : base;
}

/** The kinds a rule's reach pins that the catalog does not serve. */
export function unservedKinds(
  reach: Pick<RuleReach, 'kinds' | 'groups'>,
  catalog: ResourceCatalog,
): UnservedKind[] {
  if (!reach.kinds) return [];
  return [...reach.kinds]
    .sort()
    .filter((kind) => servedResources(kind, reach.groups, catalog).length === 0)
    .map((kind) => unservedKind(kind, reach.groups, catalog));
}

/** The kinds a compiled rule pins that the catalog does not serve. */
export function unservedKindsOf(
  rule: CompiledRule,
  catalog: ResourceCatalog,
  clusterNamespace: string,
): UnservedKind[] {
  return unservedKinds(ruleReach(rule, clusterNamespace), catalog);
}

const groupName = (g: string) => (g === '' ? 'core' : g);

/**
 * "kind Deploymnet is not served (did you mean Deployment?)", "kind ConfigMap of API group apps is not served (it is
 * in core)"; `servedBy` replaces "served" (e.g. "served by this cluster").
 */
export function describeUnserved(u: UnservedKind, servedBy = 'served'): string {
  const elsewhere = u.servedIn.length > 0 && u.groups;
  const kind = elsewhere
    ? `kind ${u.kind} of API group ${u.groups!.map(groupName).join(', ')}`
    : `kind ${u.kind}`;
  const hint = elsewhere
    ? ` (it is in ${u.servedIn.map(groupName).join(', ')})`
    : u.suggestion
      ? ` (did you mean ${u.suggestion}?)`
      : '';
  return `${kind} is not ${servedBy}${hint}`;
}

/** The field of the first criterion that names the kind (`spec.match[1].matchValue`), for warnings. */
export function kindField(rule: CompiledRule, kind: string): string {
  const at = rule.match.findIndex((item) => {
    const pin = itemPin(item, 'kind');
    return !!pin && 'values' in pin && pin.values.has(kind);
  });
  if (at < 0) return 'spec.match';
  const item = rule.match[at];
  const field =
    item.matchValue !== undefined ? 'matchValue' : item.matchValues !== undefined ? 'matchValues' : 'select';
  return `spec.match[${at}].${field}`;
}
