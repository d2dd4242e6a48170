import { CompiledRule } from '../rule/compile';
import { targetsClusterScoped } from '../store/target';
import { SafeRegex } from '../util/regex';
import { pinnedRegexes, pinnedValues } from '../rule/pins';
import { ScopeOperation, SCOPE_OPERATIONS } from './types';

/**
 * Namespaces whose objects a rule can act on: any namespace, or some names, or names matching regexes (each
 * pattern a list of regexes that must all match). A union: a namespace is in when any part takes it.
 */
export interface NamespaceSet {
  readonly any: boolean;
  readonly names: ReadonlySet<string>;
  readonly patterns: ReadonlyArray<readonly SafeRegex[]>;
}

/** Where a rule can act, as far as its location, its fields and its criteria tell. */
export interface RuleReach {
  /** namespace/name. */
  readonly rule: string;
  /** For a Pod rule's variant (spec.podControllers): the controller kind it is for. */
  readonly controller?: string;
  /** Operations the webhook must see for it: a Patch rule changes nothing on DELETE (only Reject rules act there). */
  readonly operations: ReadonlySet<ScopeOperation>;
  /** Kinds its objects must have; null: any kind. */
  readonly kinds: ReadonlySet<string> | null;
  /** API groups ('' = core) its objects' apiVersion must have; null: any group. */
  readonly groups: ReadonlySet<string> | null;
  /** Namespaced objects it can act on. */
  readonly namespaces: NamespaceSet;
  /** Whether it can act on cluster-scoped objects (Namespaces, Nodes, ClusterRoles ...). */
  readonly cluster: boolean;
  /** Why it reaches wider than one might expect (for `modrule scope` and the operator's log). */
  readonly notes: readonly string[];
  /**
   * Everything but the namespaces, as text: rules with the same shape get the same share of the net (so thousands
   * of rules generated from one template are resolved once).
   */
  readonly shape: string;
}

export const NO_NAMESPACES: NamespaceSet = { any: false, names: new Set(), patterns: [] };

/** True when the set holds no namespace at all. */
export function isEmptyNamespaceSet(set: NamespaceSet): boolean {
  return !set.any && set.names.size === 0 && set.patterns.length === 0;
}

/** The group of an apiVersion: '' for `v1`, `apps` for `apps/v1`. */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Namespaces a rule of `rule.namespace` applies to, before its criteria (store/rules.ts rulesFor). */
function locationReach(rule: CompiledRule, clusterNamespace: string, notes: string[]): NamespaceSet {
  if (rule.namespace !== clusterNamespace)
    return { any: false, names: new Set([rule.namespace]), patterns: [] };
  // The cluster namespace's own objects get every rule stored there; other namespaces those that target them.
  const names = new Set([clusterNamespace]);
  if (rule.targetNamespaceRegex) return { any: false, names, patterns: [[rule.targetNamespaceRegex]] };
  if (rule.targetNamespaceSelector) {
    // Namespace labels are not visible to the API server's conditions: every namespace, the webhook selects.
    notes.push(
      'targetNamespaceSelector: namespace labels cannot be checked before the call; every namespace',
    );
    return { any: true, names, patterns: [] };
  }
  return { any: false, names, patterns: [] };
}

/** Narrows the namespaces to those `$.metadata.namespace` criteria allow. */
function pinNamespaces(
  set: NamespaceSet,
  values: ReadonlySet<string> | null,
  regexes: SafeRegex[],
): NamespaceSet {
  let out = set;
  if (values) {
    // Named namespaces: keep those the set takes (names are tested against its patterns here, exactly).
    const names = new Set(
      [...values].filter(
        (n) => out.any || out.names.has(n) || out.patterns.some((p) => p.every((r) => r.test(n))),
      ),
    );
    out = { any: false, names, patterns: [] };
  }
  if (regexes.length === 0) return out;
  const names = new Set([...out.names].filter((n) => regexes.every((r) => r.test(n))));
  const patterns = out.any ? [regexes] : out.patterns.map((p) => [...p, ...regexes]);
  return { any: false, names, patterns };
}

/**
 * Where a rule can act. Pure and conservative: whatever the analysis cannot pin stays as wide as the rule's location
 * allows (a rule whose criteria say nothing about kinds gets every resource of the configured net).
 */
export function ruleReach(rule: CompiledRule, clusterNamespace: string): RuleReach {
  const notes: string[] = [];
  const operations = new Set(
    SCOPE_OPERATIONS.filter((op) => rule.operations.has(op) && !(op === 'DELETE' && rule.type === 'Patch')),
  );
  const kinds = pinnedValues(rule.match, 'kind');
  if (!kinds) {
    const regex = pinnedRegexes(rule.match, 'kind').length > 0;
    notes.push(
      regex ? '$.kind is matched by a regex: every resource' : 'no $.kind criterion: every resource',
    );
  }
  const versions = pinnedValues(rule.match, 'apiVersion');
  const groups = versions ? new Set([...versions].map(groupOf)) : null;
  const namespaceValues = pinnedValues(rule.match, 'namespace');
  const namespaceRegexes = pinnedRegexes(rule.match, 'namespace');
  const pinned = namespaceValues !== null || namespaceRegexes.length > 0;
  const namespaces = pinNamespaces(
    locationReach(rule, clusterNamespace, notes),
    namespaceValues,
    namespaceRegexes,
  );
  // Cluster-scoped objects have no metadata.namespace: a namespace criterion never matches them.
  const cluster = rule.namespace === clusterNamespace && targetsClusterScoped(rule) && !pinned;
  const sorted = (set: ReadonlySet<string> | null) => (set ? [...set].sort() : null);
  const shape = JSON.stringify([
    [...operations],
    sorted(kinds),
    sorted(groups),
    !isEmptyNamespaceSet(namespaces),
    cluster,
  ]);
  const controller = rule.podController?.kind;
  return {
    rule: rule.key,
    ...(controller ? { controller } : {}),
    operations,
    kinds,
    groups,
    namespaces,
    cluster,
    notes,
    shape,
  };
}
