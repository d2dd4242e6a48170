import { ResourceCatalog } from './catalog';
import { RuleReach, isEmptyNamespaceSet } from './reach';
import { RuleScope, ScopeOperation, SCOPE_OPERATIONS, WebhookRule } from './types';
import { servedResources, UnservedKind, unservedKind } from './unserved';

/**
 * A slice of the webhook's `rules`: groups x versions x resources x operations in a scope. One rule's share of the
 * net is a few of these, each inside one rule of the configured net (the wide net as installed).
 */
export interface Product {
  readonly groups: readonly string[];
  readonly versions: readonly string[];
  /** Top-level resources or `*` (all resources, never subresources: the dragnet skips those). */
  readonly resources: readonly string[];
  readonly operations: readonly ScopeOperation[];
  readonly scope: RuleScope;
}

/** What a rule wants before it meets the configured net: one group and resource (or `*`) in a scope. */
interface Want {
  group: string;
  resource: string;
  scope: RuleScope;
}

function intersectScope(a: RuleScope, b: RuleScope): RuleScope | null {
  if (a === '*') return b;
  if (b === '*' || a === b) return a;
  return null;
}

/** The top-level resources of a configured resource list that `resource` (a name or `*`) covers. */
function intersectResources(configured: readonly string[], resource: string): string[] {
  const out = new Set<string>();
  for (const entry of configured) {
    const [name, sub] = entry.split('/', 2);
    if (sub !== undefined && sub !== '*') continue; // only a subresource: nothing the dragnet acts on
    if (resource === '*') out.add(name);
    else if (name === '*' || name === resource) out.add(resource);
  }
  return out.has('*') ? ['*'] : [...out].sort();
}

/** The part of one configured rule that also lies in `want` with `operations`, or null when they do not meet. */
export function intersectRule(
  configured: WebhookRule,
  want: Want,
  operations: ReadonlySet<ScopeOperation>,
): Product | null {
  const scope = intersectScope(configured.scope, want.scope);
  if (!scope) return null;
  const allOps = configured.operations.includes('*');
  const ops = SCOPE_OPERATIONS.filter(
    (op) => operations.has(op) && (allOps || configured.operations.includes(op)),
  );
  if (ops.length === 0) return null;
  const groups =
    want.group === '*'
      ? [...configured.apiGroups].sort()
      : configured.apiGroups.includes('*') || configured.apiGroups.includes(want.group)
        ? [want.group]
        : [];
  if (groups.length === 0) return null;
  const resources = intersectResources(configured.resources, want.resource);
  if (resources.length === 0) return null;
  return { groups, versions: [...configured.apiVersions].sort(), resources, operations: ops, scope };
}

/**
 * A rule's share of the net: its wants meet every rule of the configured net; notes say where it fails wide, and
 * `unserved` which of its kinds discovery does not serve.
 */
export function productsOf(
  reach: RuleReach,
  configured: readonly WebhookRule[],
  catalog: ResourceCatalog | null,
): { products: Product[]; notes: string[]; unserved: UnservedKind[] } {
  const notes: string[] = [];
  const unserved: UnservedKind[] = [];
  const namespaced = !isEmptyNamespaceSet(reach.namespaces);
  const reachScope: RuleScope | null =
    namespaced && reach.cluster ? '*' : namespaced ? 'Namespaced' : reach.cluster ? 'Cluster' : null;
  if (!reachScope || reach.operations.size === 0 || reach.kinds?.size === 0 || reach.groups?.size === 0)
    return { products: [], notes, unserved };
  const wants: Want[] = [];
  const groups = reach.groups ? [...reach.groups].sort() : ['*'];
  if (reach.kinds) {
    for (const kind of [...reach.kinds].sort()) {
      const served = catalog ? servedResources(kind, reach.groups, catalog) : [];
      if (served.length === 0) {
        // Unknown to discovery (not installed yet, or discovery not loaded): fail wide for this rule's kind.
        notes.push(`kind ${kind} is not served${catalog ? '' : ' (no discovery yet)'}: every resource`);
        if (catalog) unserved.push(unservedKind(kind, reach.groups, catalog));
        for (const group of groups) wants.push({ group, resource: '*', scope: reachScope });
        continue;
      }
      for (const r of served) {
        const scope = intersectScope(reachScope, r.namespaced ? 'Namespaced' : 'Cluster');
        if (scope) wants.push({ group: r.group, resource: r.resource, scope });
      }
      // Groups discovery could not read may serve the kind too: all of their resources.
      for (const group of catalog?.missingGroups ?? [])
        if (!reach.groups || reach.groups.has(group)) wants.push({ group, resource: '*', scope: reachScope });
    }
  } else {
    for (const group of groups) wants.push({ group, resource: '*', scope: reachScope });
  }
  const products: Product[] = [];
  for (const want of wants)
    for (const rule of configured) {
      const p = intersectRule(rule, want, reach.operations);
      if (p) products.push(p);
    }
  if (reach.kinds && products.length === 0 && wants.length > 0)
    notes.push('outside the configured net: the API server never sends its objects');
  return { products, notes, unserved };
}

/** The webhook `rules` for a set of products: merged by groups, versions, operations and scope; sorted. */
export function mergeProducts(products: readonly Product[]): WebhookRule[] {
  const byKey = new Map<string, { rule: WebhookRule; resources: Set<string> }>();
  for (const p of products) {
    const key = JSON.stringify([p.groups, p.versions, p.operations, p.scope]);
    let entry = byKey.get(key);
    if (!entry) {
      entry = {
        rule: {
          apiGroups: [...p.groups],
          apiVersions: [...p.versions],
          resources: [],
          operations: [...p.operations],
          scope: p.scope,
        },
        resources: new Set(),
      };
      byKey.set(key, entry);
    }
    for (const r of p.resources) entry.resources.add(r);
  }
  return [...byKey.keys()].sort().map((key) => {
    const { rule, resources } = byKey.get(key)!;
    return { ...rule, resources: resources.has('*') ? ['*'] : [...resources].sort() };
  });
}
