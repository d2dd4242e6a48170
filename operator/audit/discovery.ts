import { isJsonObject, JsonObject } from '../../util/json';
import { ListableResource } from '../../audit/types';
import { KubeClient } from '../../kube/kube';
import { messageOf } from '../../util/errors';

function resourcesOf(list: JsonObject, group: string, version: string): ListableResource[] {
  const out: ListableResource[] = [];
  for (const r of Array.isArray(list.resources) ? list.resources : []) {
    if (!isJsonObject(r) || typeof r.name !== 'string' || typeof r.kind !== 'string') continue;
    out.push({
      group,
      version,
      resource: r.name,
      kind: r.kind,
      namespaced: r.namespaced === true,
      verbs: Array.isArray(r.verbs) ? r.verbs.filter((v): v is string => typeof v === 'string') : [],
      shortNames: Array.isArray(r.shortNames)
        ? r.shortNames.filter((v): v is string => typeof v === 'string')
        : [],
      singularName: typeof r.singularName === 'string' ? r.singularName : '',
    });
  }
  return out;
}

/** What discovery found, and the groups it could not read (an aggregated API that is down). */
export interface Discovery {
  resources: ListableResource[];
  failedGroups: Array<{ groupVersion: string; error: string }>;
}

/**
 * Every resource the API server serves, at each group's preferred version: GET /api/v1, /apis, and
 * /apis/GROUP/VERSION per group (at most `parallel` at a time). A group that fails (an aggregated API server that is
 * unavailable answers 503) is reported and left out, as kubectl does.
 */
export async function discoverResources(client: KubeClient, parallel = 8): Promise<Discovery> {
  const core = await client.request('GET', '/api/v1');
  const resources = resourcesOf(core, '', 'v1');
  const groups = await client.request('GET', '/apis');
  const versions: Array<{ group: string; version: string }> = [];
  for (const g of Array.isArray(groups.groups) ? groups.groups : []) {
    if (!isJsonObject(g) || typeof g.name !== 'string' || !isJsonObject(g.preferredVersion)) continue;
    const version = g.preferredVersion.version;
    if (typeof version === 'string') versions.push({ group: g.name, version });
  }
  const failedGroups: Discovery['failedGroups'] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, versions.length) }, async () => {
      while (next < versions.length) {
        const { group, version } = versions[next++];
        try {
          resources.push(
            ...resourcesOf(await client.request('GET', `/apis/${group}/${version}`), group, version),
          );
        } catch (err) {
          failedGroups.push({ groupVersion: `${group}/${version}`, error: messageOf(err) });
        }
      }
    }),
  );
  return { resources, failedGroups };
}

/** The collection URL of a resource, in one namespace or across all ('' or null). */
export function collectionPath(r: ListableResource, namespace: string | null): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return namespace && r.namespaced
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.resource}`
    : `${base}/${r.resource}`;
}

/** One object's URL. */
export function objectPath(r: ListableResource, namespace: string, name: string): string {
  return `${collectionPath(r, namespace || null)}/${encodeURIComponent(name)}`;
}
