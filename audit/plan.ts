import { JsonObject } from '../util/json';
import { IGNORE_LABEL } from '../rule/types';
import { RuleSnapshot } from '../store/rules';
import { namespaceLabels } from '../store/target';
import { InstalledNet } from './dragnet';
import { auditableResources, kindsNamed, rulesReaching } from './reach';
import { resourceName, ListableResource } from './types';

/** One list to make: a resource, in some namespaces (or cluster-scoped). */
export interface ScanTarget {
  resource: ListableResource;
  /** Namespaces whose objects some rule can reach; null for a cluster-scoped resource. */
  namespaces: string[] | null;
  /** List across all namespaces and keep the objects of `namespaces` (cheaper than one list per namespace). */
  clusterWide: boolean;
}

/** What to list, and what the user should know about what is not listed. */
export interface ScanPlan {
  targets: ScanTarget[];
  notes: string[];
}

export interface PlanOptions {
  /** Only this namespace (cluster-scoped resources are then left out). */
  namespace?: string;
  /** Above this many namespaces, a resource is listed across all namespaces at once; default 10. */
  clusterWideAbove?: number;
}

const labelsOf = (ns: JsonObject | undefined): Readonly<Record<string, string>> => namespaceLabels(ns) ?? {};

/** Whether objects in this namespace reach the webhook at all: not labelled ignore, selected by the dragnet. */
export function namespaceAudited(snapshot: RuleSnapshot, scope: InstalledNet, namespace: string): boolean {
  const labels = labelsOf(snapshot.namespace(namespace));
  return labels[IGNORE_LABEL] !== 'true' && scope.selectsNamespace(labels);
}

/**
 * The lists an audit makes: every (resource, namespace) some rule can reach, among the resources the dragnet webhook
 * receives and the namespaces it is not kept out of. Pure: the caller lists.
 */
export function planScan(
  snapshot: RuleSnapshot,
  served: readonly ListableResource[],
  namespaceNames: readonly string[],
  scope: InstalledNet,
  options: PlanOptions = {},
): ScanPlan {
  const notes: string[] = [];
  const candidates = (options.namespace ? [options.namespace] : namespaceNames).filter((ns) =>
    namespaceAudited(snapshot, scope, ns),
  );
  const resources = auditableResources(served);
  const named = namedKinds(snapshot, candidates, options.namespace === undefined);
  const targets: ScanTarget[] = [];
  for (const resource of resources) {
    if (!scope.covers(resource)) {
      if (named.has(resource.kind))
        notes.push(
          `${resourceName(resource)} (kind ${resource.kind}) is not among the dragnet webhook's resources: ` +
            'the webhook never sees these objects, so they are not audited',
        );
      continue;
    }
    if (!resource.namespaced) {
      if (options.namespace !== undefined) continue;
      if (rulesReaching(snapshot.rulesFor(null), resource).length > 0)
        targets.push({ resource, namespaces: null, clusterWide: true });
      continue;
    }
    const namespaces = candidates.filter((ns) => rulesReaching(snapshot.rulesFor(ns), resource).length > 0);
    if (namespaces.length === 0) continue;
    const clusterWide =
      options.namespace === undefined && namespaces.length > (options.clusterWideAbove ?? 10);
    targets.push({ resource, namespaces, clusterWide });
  }
  const servedKinds = new Set(served.map((r) => r.kind));
  for (const [kind, rules] of named) {
    if (!servedKinds.has(kind))
      notes.push(
        `kind ${kind} (named by ModRule ${rules.join(', ')}) is not served by this cluster: nothing to audit`,
      );
  }
  return { targets, notes };
}

/** Kinds named by the UPDATE rules in scope of these namespaces (and of cluster-scoped objects), with the rules. */
function namedKinds(
  snapshot: RuleSnapshot,
  namespaces: readonly string[],
  clusterScoped: boolean,
): Map<string, string[]> {
  const seen = new Set<string>();
  const out = new Map<string, string[]>();
  const lists = namespaces.map((ns) => snapshot.rulesFor(ns));
  if (clusterScoped) lists.push(snapshot.rulesFor(null));
  for (const list of lists) {
    for (const rule of list) {
      if (seen.has(rule.key) || !rule.operations.has('UPDATE')) continue;
      seen.add(rule.key);
      for (const kind of kindsNamed(rule)) out.set(kind, [...(out.get(kind) ?? []), rule.key]);
    }
  }
  return out;
}

/** Labels of an object (string values only). */
export function objectLabels(object: JsonObject): Readonly<Record<string, string>> {
  return labelsOf(object);
}
