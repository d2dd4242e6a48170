import { JsonObject } from '../util/json';
import { CompiledRule } from '../rule/compile';
import { namespaceLabels, targetsClusterScoped, targetsNamespace } from './target';

/** A consistent, never-mutated view of the rules and cluster data one admission request works with. */
export interface RuleSnapshot {
  readonly clusterNamespace: string;
  /**
   * Rules that apply to objects in `namespace`, sorted by tier then namespace/name: the namespace's own rules plus
   * cluster-namespace rules whose targetNamespaceRegex / targetNamespaceSelector match. null or '' = cluster-scoped.
   */
  rulesFor(namespace: string | null): readonly CompiledRule[];
  /** Namespace manifest (syntheticRefs.namespace, ignore label). */
  namespace(name: string): JsonObject | undefined;
  /** Node manifest (syntheticRefs.node). */
  node(name: string): JsonObject | undefined;
  readonly ruleCount: number;
  readonly namespaceCount: number;
  readonly nodeCount: number;
}

type RuleMap = ReadonlyMap<string, readonly CompiledRule[]>;

// Memoized merges per snapshot; a snapshot serves requests for at most as many namespaces as the cluster has,
// but cap it anyway so a stream of made-up namespace names cannot grow it without bound.
const MAX_MEMOIZED_NAMESPACES = 10_000;

/** Orders rules for evaluation: tier, then namespace/name so equal tiers run in a fixed order. */
export function compareRules(a: CompiledRule, b: CompiledRule): number {
  if (a.tier !== b.tier) return a.tier - b.tier;
  if (a.namespace !== b.namespace) return a.namespace < b.namespace ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Rule lists a new snapshot may take over from the previous one (same rules, some Namespaces unchanged). */
export interface Memo {
  readonly merged: Map<string, readonly CompiledRule[]>;
  readonly clusterScoped: readonly CompiledRule[] | undefined;
}

/** What a snapshot is made of, as the store hands it over; none of it changes afterwards. */
export interface SnapshotContents {
  readonly clusterNamespace: string;
  /** Each namespace's own rules, in evaluation order. */
  readonly byNamespace: RuleMap;
  readonly namespaces: ReadonlyMap<string, JsonObject>;
  readonly nodes: ReadonlyMap<string, JsonObject>;
  readonly ruleCount: number;
}

/** The RuleSnapshot a RuleStore hands out: its maps never change, rule lists per namespace are merged on demand. */
export class Snapshot implements RuleSnapshot {
  readonly clusterNamespace: string;
  readonly ruleCount: number;
  // Held as fields of their own (not through `contents`): rulesFor reads them on every request.
  private readonly byNamespace: RuleMap;
  private readonly namespaces: ReadonlyMap<string, JsonObject>;
  private readonly nodes: ReadonlyMap<string, JsonObject>;
  private readonly merged: Map<string, readonly CompiledRule[]>;
  private clusterScoped: readonly CompiledRule[] | undefined;

  constructor(contents: SnapshotContents, memo?: Memo) {
    this.clusterNamespace = contents.clusterNamespace;
    this.byNamespace = contents.byNamespace;
    this.namespaces = contents.namespaces;
    this.nodes = contents.nodes;
    this.ruleCount = contents.ruleCount;
    this.merged = memo?.merged ?? new Map();
    this.clusterScoped = memo?.clusterScoped;
  }

  /**
   * The lists computed so far, for a next snapshot with the same rules. With no stale namespace the inputs are
   * identical, so both snapshots share (and fill) one memo; otherwise the next one gets a copy without them.
   */
  memoExcept(stale: ReadonlySet<string>): Memo {
    if (stale.size === 0) return { merged: this.merged, clusterScoped: this.clusterScoped };
    const merged = new Map(this.merged);
    for (const ns of stale) merged.delete(ns);
    return { merged, clusterScoped: this.clusterScoped };
  }

  rulesFor(namespace: string | null): readonly CompiledRule[] {
    if (namespace === null || namespace === '') {
      // KubeMod: cluster-namespace rules without a regex, plus those whose regex matches "" (e.g. ".*").
      this.clusterScoped ??= (this.byNamespace.get(this.clusterNamespace) ?? []).filter(targetsClusterScoped);
      return this.clusterScoped;
    }
    const hit = this.merged.get(namespace);
    if (hit) return hit;
    const own = this.byNamespace.get(namespace) ?? [];
    const wide =
      namespace === this.clusterNamespace
        ? [] // the cluster namespace's own list already holds every cluster-wide rule
        : this.wideRulesFor(namespace);
    const rules = wide.length === 0 ? own : mergeSorted(own, wide);
    if (this.merged.size >= MAX_MEMOIZED_NAMESPACES) this.merged.clear();
    this.merged.set(namespace, rules);
    return rules;
  }

  private wideRulesFor(namespace: string): readonly CompiledRule[] {
    const wide = this.byNamespace.get(this.clusterNamespace);
    if (!wide) return [];
    const labels = namespaceLabels(this.namespaces.get(namespace));
    return wide.filter((r) => targetsNamespace(r, namespace, labels));
  }

  namespace(name: string): JsonObject | undefined {
    return this.namespaces.get(name);
  }

  node(name: string): JsonObject | undefined {
    return this.nodes.get(name);
  }

  get namespaceCount(): number {
    return this.namespaces.size;
  }

  get nodeCount(): number {
    return this.nodes.size;
  }
}

function mergeSorted(a: readonly CompiledRule[], b: readonly CompiledRule[]): CompiledRule[] {
  const out: CompiledRule[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(compareRules(a[i], b[j]) <= 0 ? a[i++] : b[j++]);
  while (i < a.length) out.push(a[i++]);
  while (j < b.length) out.push(b[j++]);
  return out;
}
