import { messageOf } from '../../util/errors';
import { resourcesOfList } from '../../scope/catalog';
import { KubeApiError, KubeClient } from '../../kube/kube';

/*
 * Which resource serves a kind the rules reference or an ownerReference names: one discovery read of its group
 * version (GET /api/v1, /apis/GROUP/VERSION), remembered. A group version that is not served, or does not have the
 * kind, is an answer too ("not served"); other failures are retried on the next call.
 */

/** The resource serving a kind, at the version asked for. */
export interface KindResource {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** The URL of a kind's objects in a namespace ('' or a cluster-scoped kind: all of them). */
export function collectionUrl(r: KindResource, namespace: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return namespace && r.namespaced
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.resource}`
    : `${base}/${r.resource}`;
}

/** A kind's resource, or why there is none. */
export type Resolved = { readonly resource: KindResource } | { readonly unreadable: string };

export class ResourceResolver {
  private readonly lists = new Map<string, Promise<Map<string, KindResource> | string>>();

  constructor(private readonly client: KubeClient) {}

  /** The resource of group/version/kind. */
  async resolve(group: string, version: string, kind: string): Promise<Resolved> {
    const gv = group ? `${group}/${version}` : version;
    let list = this.lists.get(gv);
    if (!list) {
      list = this.read(group, version);
      this.lists.set(gv, list);
    }
    let kinds: Map<string, KindResource> | string;
    try {
      kinds = await list;
    } catch (err) {
      this.lists.delete(gv); // transient: ask again next time
      return { unreadable: `cannot read API discovery of ${gv}: ${messageOf(err)}` };
    }
    if (typeof kinds === 'string') return { unreadable: kinds };
    const resource = kinds.get(kind);
    return resource ? { resource } : { unreadable: `kind ${kind} is not served in ${gv}` };
  }

  /** Forgets what was read (a CRD may have come since). */
  forget(): void {
    this.lists.clear();
  }

  private async read(group: string, version: string): Promise<Map<string, KindResource> | string> {
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    try {
      const list = await this.client.request('GET', path);
      const out = new Map<string, KindResource>();
      for (const r of resourcesOfList(list)) {
        if (r.resource.includes('/')) continue; // subresources
        out.set(r.kind, { group, version, resource: r.resource, kind: r.kind, namespaced: r.namespaced });
      }
      return out;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return `${path} is not served`;
      throw err;
    }
  }
}
