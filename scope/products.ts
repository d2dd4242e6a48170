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
  /** The served kind it stands for (null: a kind's fail-wide want, or no kind pinned). */
  kind: string | null;
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

/** What a rule wants before it meets the net: per kind the resources discovery serves it as (or all, failing wide). */
function wantsOf(
  reach: RuleReach,
  reachScope: RuleScope,
  catalog: ResourceCatalog | null,
): { wants: Want[]; notes: string[]; unserved: UnservedKind[] } {
  const notes: string[] = [];
  const unserved: UnservedKind[] = [];
  const wants: Want[] = [];
  const groups = reach.groups ? [...reach.groups].sort() : ['*'];
  const everything = (kind: string | null) => {
    for (const group of groups) wants.push({ group, resource: '*', scope: reachScope, kind });
  };
  if (!reach.kinds) everything(null);
  for (const kind of reach.kinds ? [...reach.kinds].sort() : []) {
    const served = catalog ? servedResources(kind, reach.groups, catalog) : [];
    if (served.length === 0) {
      // Unknown to discovery (not installed yet, or discovery not loaded): fail wide for this rule's kind.
      notes.push(`kind ${kind} is not served${catalog ? '' : ' (no discovery yet)'}: every resource`);
      if (catalog) unserved.push(unservedKind(kind, reach.groups, catalog));
      everything(null);
      continue;
    }
    for (const r of served) {
      const scope = intersectScope(reachScope, r.namespaced ? 'Namespaced' : 'Cluster');
      if (scope) wants.push({ group: r.group, resource: r.resource, scope, kind });
    }
    // Groups discovery could not read may serve the kind too: all of their resources.
    for (const group of catalog?.missingGroups ?? [])
      if (!reach.groups || reach.groups.has(group))
        wants.push({ group, resource: '*', scope: reachScope, kind: null });
  }
  return { wants, notes, unserved };
}

/**
 * A rule's share of the net: its wants meet every rule of the configured net; notes say where it fails wide,
 * `unserved` which of its kinds discovery does not serve, and `outside` which served kinds the configured net never
 * sends (the rule can never act on their objects through the webhook).
 */
export function productsOf(
  reach: RuleReach,
  configured: readonly WebhookRule[],
  catalog: ResourceCatalog | null,
): { products: Product[]; notes: string[]; unserved: UnservedKind[]; outside: string[] } {
  const namespaced = !isEmptyNamespaceSet(reach.namespaces);
  const reachScope: RuleScope | null =
    namespaced && reach.cluster ? '*' : namespaced ? 'Namespaced' : reach.cluster ? 'Cluster' : null;
  if (!reachScope || reach.operations.size === 0 || reach.kinds?.size === 0 || reach.groups?.size === 0)
    return { products: [], notes: [], unserved: [], outside: [] };
  const { wants, notes, unserved } = wantsOf(reach, reachScope, catalog);
  const products: Product[] = [];
  const sent = new Set<string>();
  const servedKinds = new Set<string>();
  for (const want of wants) {
    if (want.kind !== null) servedKinds.add(want.kind);
    for (const rule of configured) {
      const p = intersectRule(rule, want, reach.operations);
      if (!p) continue;
      products.push(p);
      if (want.kind !== null) sent.add(want.kind);
    }
  }
  const outside = [...servedKinds].filter((k) => !sent.has(k));
  if (reach.kinds && products.length === 0 && wants.length > 0)
    notes.push('outside the configured net: the API server never sends its objects');
  else if (outside.length > 0) notes.push(`kind ${outside.join(', ')} outside the configured net`);
  return { products, notes, unserved, outside };
}

/**
 * The webhook `rules` for a set of products: each resource's operations united (pods CREATE and pods UPDATE are one
 * entry), merged by groups, versions, operations and scope, sorted, and without entries another one already covers.
 */
export function mergeProducts(products: readonly Product[]): WebhookRule[] {
  // Operations per resource, within each groups x versions x scope.
  const cells = new Map<string, { product: Product; ops: Map<string, Set<ScopeOperation>> }>();
  for (const p of products) {
    const key = JSON.stringify([p.groups, p.versions, p.scope]);
    let cell = cells.get(key);
    if (!cell) cells.set(key, (cell = { product: p, ops: new Map() }));
    for (const r of p.resources) {
      let ops = cell.ops.get(r);
      if (!ops) cell.ops.set(r, (ops = new Set()));
      for (const op of p.operations) ops.add(op);
    }
  }
  const byKey = new Map<string, WebhookRule>();
  for (const { product, ops } of cells.values())
    for (const [resource, set] of ops) {
      const operations = SCOPE_OPERATIONS.filter((op) => set.has(op));
      const key = JSON.stringify([product.groups, product.versions, operations, product.scope]);
      let rule = byKey.get(key);
      if (!rule)
        byKey.set(
          key,
          (rule = {
            apiGroups: [...product.groups],
            apiVersions: [...product.versions],
            resources: [],
            operations,
            scope: product.scope,
          }),
        );
      rule.resources.push(resource);
    }
  const rules = [...byKey.keys()].sort().map((key) => {
    const rule = byKey.get(key)!;
    return { ...rule, resources: rule.resources.includes('*') ? ['*'] : [...rule.resources].sort() };
  });
  return withoutCovered(rules);
}

const within = (list: readonly string[], value: string): boolean =>
  list.includes('*') || list.includes(value);

/** Whether webhook rule `a` sends every request `b` sends for `resource`. */
function covers(a: WebhookRule, b: WebhookRule, resource: string): boolean {
  return (
    (a.scope === '*' || a.scope === b.scope) &&
    (a.resources.includes('*') || (resource !== '*' && a.resources.includes(resource))) &&
    b.apiGroups.every((g) => within(a.apiGroups, g)) &&
    b.apiVersions.every((v) => within(a.apiVersions, v)) &&
    b.operations.every((op) => within(a.operations, op))
  );
}

// One resource at a time, against the others as they stand: of two entries that cover each other, one stays.
function withoutCovered(rules: WebhookRule[]): WebhookRule[] {
  const out = rules.map((r) => ({ ...r, resources: [...r.resources] }));
  out.forEach((rule, i) => {
    rule.resources = rule.resources.filter(
      (resource) =>
        !out.some((other, j) => j !== i && other.resources.length > 0 && covers(other, rule, resource)),
    );
  });
  return out.filter((r) => r.resources.length > 0);
}
