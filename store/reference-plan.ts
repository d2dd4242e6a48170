import { JsonObject } from '../util/json';
import { labelsOf, nameOf } from '../util/meta';
import type { CompiledRule } from '../rule/compile';
import type { CompiledLabelSelector } from '../rule/labelselector';
import type { ReferenceDecl } from '../rule/references';

/*
 * What the reference caches must hold for the rules in force (pure): one watch per kind and namespace that rules
 * name, keeping only the objects named or selected (1,000 rules naming one ConfigMap: one watch, one object), and
 * whether, where and how much of owners to keep.
 */

/** The objects of one kind in one namespace that rules reference. */
export interface NamedWatch {
  /** `group/Kind/namespace`: one watch (and cache partition) each. */
  readonly id: string;
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** '' for cluster-scoped kinds. */
  readonly namespace: string;
  /** Object names rules ask for. */
  readonly names: ReadonlySet<string>;
  /** Label selectors rules ask with, by their canonical text. */
  readonly selectors: ReadonlyMap<string, CompiledLabelSelector>;
}

/** Where and how owners are needed; null when no rule reads syntheticRefs.owner. */
export interface OwnerNeeds {
  /** Namespaces of the objects whose owners rules read ('all' once a cluster-wide rule reads them). */
  readonly namespaces: ReadonlySet<string> | 'all';
  /** 'metadata' when every such rule reads only apiVersion, kind and metadata of owners. */
  readonly fields: 'metadata' | 'all';
}

/** Everything the caches must hold. */
export interface ReferencePlan {
  readonly named: ReadonlyMap<string, NamedWatch>;
  readonly owners: OwnerNeeds | null;
}

/** The watch id of a declaration's kind and namespace. */
export function watchId(decl: Pick<ReferenceDecl, 'group' | 'kind' | 'namespace'>): string {
  return `${decl.group}/${decl.kind}/${decl.namespace}`;
}

/** Whether an object is one a watch keeps (named, or matched by one of its selectors). */
export function keeps(watch: NamedWatch, obj: JsonObject): boolean {
  if (watch.names.has(nameOf(obj))) return true;
  if (watch.selectors.size === 0) return false;
  const labels = labelsOf(obj);
  for (const s of watch.selectors.values()) if (s.matches(labels)) return true;
  return false;
}

/** Whether `watch` (what a cache listed with) holds everything `decl` asks for. */
export function covers(watch: NamedWatch | undefined, decl: ReferenceDecl): boolean {
  if (!watch) return false;
  return decl.objectName !== undefined
    ? watch.names.has(decl.objectName)
    : watch.selectors.has(decl.selectorKey ?? '');
}

/** Whether `a` asks for no more than `b` (a cache listed for `b` serves `a` without listing again). */
export function within(a: NamedWatch, b: NamedWatch): boolean {
  for (const n of a.names) if (!b.names.has(n)) return false;
  for (const k of a.selectors.keys()) if (!b.selectors.has(k)) return false;
  return true;
}

/** The plan for a set of rules (`clusterNamespace`: where rules read owners of every namespace). */
export function referencePlan(rules: Iterable<CompiledRule>, clusterNamespace: string): ReferencePlan {
  const named = new Map<
    string,
    { watch: NamedWatch; names: Set<string>; selectors: Map<string, CompiledLabelSelector> }
  >();
  let ownerNamespaces: Set<string> | 'all' | null = null;
  let ownerFields: 'metadata' | 'all' = 'metadata';
  for (const rule of rules) {
    const refs = rule.references;
    if (!refs) continue;
    for (const decl of refs.named) {
      const id = watchId(decl);
      let entry = named.get(id);
      if (!entry) {
        const names = new Set<string>();
        const selectors = new Map<string, CompiledLabelSelector>();
        const { group, version, kind, namespace } = decl;
        entry = { watch: { id, group, version, kind, namespace, names, selectors }, names, selectors };
        named.set(id, entry);
      }
      if (decl.objectName !== undefined) entry.names.add(decl.objectName);
      else if (decl.selector) entry.selectors.set(decl.selectorKey ?? '', decl.selector);
    }
    if (refs.owner.levels > 0) {
      if (rule.namespace === clusterNamespace) ownerNamespaces = 'all';
      else if (ownerNamespaces !== 'all') {
        ownerNamespaces ??= new Set<string>();
        ownerNamespaces.add(rule.namespace);
      }
      if (refs.owner.fields === 'all') ownerFields = 'all';
    }
  }
  return {
    named: new Map([...named].map(([id, e]) => [id, e.watch])),
    owners: ownerNamespaces === null ? null : { namespaces: ownerNamespaces, fields: ownerFields },
  };
}
