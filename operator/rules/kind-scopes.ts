import { ClusterScoped, offlineClusterScoped } from '../../rule/kinds';
import type { CatalogSource } from './discovery';

/**
 * Which kinds are cluster-scoped, for the rules' references: what the API server's discovery says (`namespaced` of
 * the kind's resource in its group), once read; the offline list (rule/kinds.ts) for a kind it does not serve, and
 * before its first read. The store compiles with it; ClusterSync compiles again the rules whose answer changed.
 */
export class KindScopes {
  private source: CatalogSource | null = null;

  /** Answers from `source` from now on. */
  follow(source: CatalogSource): void {
    this.source = source;
  }

  /** The store's ReferencePolicy.clusterScoped. */
  readonly clusterScoped: ClusterScoped = (group, kind) => {
    const served = this.source
      ?.catalog()
      ?.resourcesOf(kind)
      .find((r) => r.group === group);
    return served ? !served.namespaced : offlineClusterScoped(group, kind);
  };
}
