import { isJsonObject, JsonObject } from '../util/json';
import { BUILTIN_RESOURCES } from './builtin';
import { ServedResource } from './types';

/**
 * Resources no rule names are left out of a wildcard net by default: they are written constantly (node heartbeats,
 * events, endpoint updates, every authentication and authorization check), and KubeMod's list never had them.
 * Group-less names: the scope's conditions compare resource names only.
 */
export const HIGH_CHURN_RESOURCES: readonly string[] = [
  'events',
  'leases',
  'endpoints',
  'endpointslices',
  'tokenreviews',
  'subjectaccessreviews',
  'localsubjectaccessreviews',
  'selfsubjectaccessreviews',
  'selfsubjectrulesreviews',
  'selfsubjectreviews',
];

/** Which resources serve each kind: what discovery says (or, offline, Kubernetes' built-ins plus given CRDs). */
export class ResourceCatalog {
  private readonly byKind = new Map<string, ServedResource[]>();
  /** Groups discovery could not read (an aggregated API that is down): any kind may live there. */
  readonly missingGroups: readonly string[];

  constructor(resources: Iterable<ServedResource>, missingGroups: readonly string[] = []) {
    const seen = new Set<string>();
    for (const r of resources) {
      if (r.resource.includes('/')) continue; // subresources: the dragnet never acts on them
      const id = `${r.group}/${r.resource}/${r.kind}`;
      if (seen.has(id)) continue; // the same resource in several versions
      seen.add(id);
      const list = this.byKind.get(r.kind);
      if (list) list.push(r);
      else this.byKind.set(r.kind, [r]);
    }
    for (const list of this.byKind.values())
      list.sort((a, b) => (a.group + '/' + a.resource < b.group + '/' + b.resource ? -1 : 1));
    this.missingGroups = [...new Set(missingGroups)].sort();
  }

  /** The resources whose objects have this kind, [] when none is served. */
  resourcesOf(kind: string): readonly ServedResource[] {
    return this.byKind.get(kind) ?? [];
  }

  /** Every kind served, sorted. */
  kinds(): string[] {
    return [...this.byKind.keys()].sort();
  }

  /** A stable text of the catalog's content, to tell whether a refresh changed anything. */
  fingerprint(): string {
    return this.kinds()
      .map(
        (k) => `${k}=${this.resourcesOf(k).map((r) => `${r.group}/${r.resource}${r.namespaced ? '' : '!'}`)}`,
      )
      .join(';')
      .concat(`;missing=${this.missingGroups.join(',')}`);
  }

  /** Kubernetes 1.37's built-in resources plus the kinds of the given CRD manifests (offline use). */
  static builtin(crds: readonly JsonObject[] = []): ResourceCatalog {
    return new ResourceCatalog([...BUILTIN_RESOURCES, ...crds.flatMap(resourcesOfCrd)]);
  }
}

/** The resources of one APIResourceList (GET /api/v1, /apis/GROUP/VERSION). */
export function resourcesOfList(list: JsonObject): ServedResource[] {
  const groupVersion = typeof list.groupVersion === 'string' ? list.groupVersion : '';
  const slash = groupVersion.indexOf('/');
  const group = slash < 0 ? '' : groupVersion.slice(0, slash);
  const items = Array.isArray(list.resources) ? list.resources : [];
  const out: ServedResource[] = [];
  for (const r of items) {
    if (!isJsonObject(r) || typeof r.name !== 'string' || typeof r.kind !== 'string') continue;
    out.push({ group, resource: r.name, kind: r.kind, namespaced: r.namespaced === true });
  }
  return out;
}

/** The resource a CustomResourceDefinition manifest declares, [] when it is not one. */
export function resourcesOfCrd(crd: JsonObject): ServedResource[] {
  if (crd.kind !== 'CustomResourceDefinition' || !isJsonObject(crd.spec)) return [];
  const { group, names, scope } = crd.spec;
  if (typeof group !== 'string' || !isJsonObject(names)) return [];
  if (typeof names.plural !== 'string' || typeof names.kind !== 'string') return [];
  return [{ group, resource: names.plural, kind: names.kind, namespaced: scope !== 'Cluster' }];
}
