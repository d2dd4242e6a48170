import { isJsonObject, JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule, CompileOptions } from '../rule/compile';
import { ValidationProblem } from '../rule/problems';
import type { ReferencePolicy } from '../rule/references';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { ManifestCache, nameOf } from './manifests';
import { compareRules, RuleSnapshot, Snapshot } from './snapshot';
import { namespaceLabels, sameLabels } from './target';

// The snapshot type and the rule order are part of the store's surface.
export { compareRules } from './snapshot';
export type { RuleSnapshot } from './snapshot';

/** A rule as the store holds it: itself and, for a Pod rule with spec.podControllers, its controller variants. */
function withItsVariants(rule: CompiledRule): readonly CompiledRule[] {
  return rule.variants ? [rule, ...rule.variants] : [rule];
}

/** How many ModRules a list holds (a Pod rule's variants are the same ModRule). */
function modRules(list: readonly CompiledRule[]): number {
  let n = 0;
  for (const r of list) if (!r.podController) n++;
  return n;
}

function ruleIdentity(rule: unknown): { namespace: string; name: string } | undefined {
  if (!isJsonObject(rule) || !isJsonObject(rule.metadata)) return undefined;
  const { name, namespace } = rule.metadata;
  if (typeof name !== 'string' || name === '') return undefined;
  return { name, namespace: typeof namespace === 'string' ? namespace : '' };
}

/**
 * Holds the compiled ModRules and the Namespace/Node manifests the engine needs.
 * Writers (operator informers, `serve --local`) replace per-namespace arrays copy-on-write; readers take snapshots.
 */
export class RuleStore {
  readonly clusterNamespace: string;
  private byNamespace = new Map<string, readonly CompiledRule[]>();
  private readonly namespaces = new ManifestCache();
  private readonly nodes = new ManifestCache();
  private count = 0;
  private current: Snapshot | undefined;
  // The last snapshot handed out, and what changed since for its memoized rule lists: 'all' after a rule change,
  // else the namespaces whose labels changed (only their cluster-wide rules need choosing again).
  private previous: Snapshot | undefined;
  private stale: Set<string> | 'all' = 'all';
  // The rule map handed to a snapshot must not change; the next write copies it first (copy-on-write).
  private sharedRules = false;
  private readonly listeners = new Set<() => void>();
  /** Counts changes of the rules held (not of Namespaces or Nodes): who derives from the rules sees when to redo it. */
  rulesVersion = 0;

  // false in the servers: CompiledRule.source is for the CLI's explain/lint, and would keep every ModRule object.
  private readonly compileOptions: CompileOptions;

  constructor(
    options: {
      clusterNamespace?: string;
      keepSource?: boolean;
      /** Whether spec.references may name Secrets (the operator's --allow-secret-references); default false. */
      references?: { allowSecrets?: boolean };
    } = {},
  ) {
    this.clusterNamespace = options.clusterNamespace || DEFAULT_CLUSTER_NAMESPACE;
    this.compileOptions = {
      keepSource: options.keepSource ?? true,
      references: {
        clusterNamespace: this.clusterNamespace,
        allowSecrets: options.references?.allowSecrets ?? false,
      },
    };
  }

  /** What rules of this store may reference (the webhook validates ModRules with the same). */
  get referencePolicy(): ReferencePolicy {
    return this.compileOptions.references as ReferencePolicy;
  }

  /** The current view; O(1) when nothing changed since the last call. */
  snapshot(): RuleSnapshot {
    if (!this.current) {
      this.current = new Snapshot(
        {
          clusterNamespace: this.clusterNamespace,
          byNamespace: this.byNamespace,
          namespaces: this.namespaces.share(),
          nodes: this.nodes.share(),
          ruleCount: this.count,
        },
        this.previous && this.stale !== 'all' ? this.previous.memoExcept(this.stale) : undefined,
      );
      this.sharedRules = true;
      this.previous = this.current;
      this.stale = new Set();
    }
    return this.current;
  }

  /**
   * Compiles a rule as this store holds them (same options, namespace required) without storing it: the rule when
   * it is valid, and every problem found.
   */
  compileRule(rule: unknown): { rule?: CompiledRule; problems: ValidationProblem[] } {
    const { rule: compiled, problems } = analyzeModRule(rule, this.compileOptions);
    if (compiled && compiled.namespace === '') {
      problems.push({ field: 'metadata.namespace', message: 'required: ModRules are namespaced' });
      return { problems };
    }
    return { rule: compiled, problems };
  }

  /** Every rule held now (any order), a Pod rule's controller variants included. */
  allRules(): CompiledRule[] {
    return [...this.byNamespace.values()].flat();
  }

  /** Adds or replaces a rule; returns its problems ([] = accepted). An invalid rule removes its older version. */
  upsertRule(rule: unknown): ValidationProblem[] {
    const { rule: compiled, problems } = this.compileRule(rule);
    const id = ruleIdentity(rule);
    // A new version is served by the webhook in full until its own policy is in force.
    if (id) this.forgetNative(id.namespace, id.name);
    if (!compiled || problems.length > 0) {
      if (id) this.deleteRule(id.namespace, id.name);
      return problems;
    }
    this.writeRules(compiled.namespace, (list) => [
      ...list.filter((r) => r.name !== compiled.name),
      ...withItsVariants(compiled),
    ]);
    return [];
  }

  /** Removes a rule; unknown rules are ignored. */
  deleteRule(namespace: string, name: string): void {
    this.forgetNative(namespace, name);
    const list = this.byNamespace.get(namespace);
    if (!list || !list.some((r) => r.name === name)) return;
    this.writeRules(namespace, (l) => l.filter((r) => r.name !== name));
  }

  /**
   * Replaces every rule (an informer relist); returns the rules that were rejected. `compiled` are rules compiled
   * before (compileRule, or a previous version kept in force), taken as they are; a rule in `rules` with the same
   * namespace/name replaces one of them.
   */
  replaceRules(
    rules: readonly unknown[],
    compiled: readonly CompiledRule[] = [],
  ): Array<{ namespace: string; name: string; problems: ValidationProblem[] }> {
    const rejected: Array<{ namespace: string; name: string; problems: ValidationProblem[] }> = [];
    // By name within a namespace: a relist of n rules in one namespace stays O(n), the last definition wins.
    const byName = new Map<string, Map<string, CompiledRule>>();
    const add = (rule: CompiledRule) => {
      let names = byName.get(rule.namespace);
      if (!names) byName.set(rule.namespace, (names = new Map()));
      names.set(rule.name, rule);
    };
    for (const rule of compiled) add(rule);
    for (const raw of rules) {
      const { rule, problems } = this.compileRule(raw);
      if (!rule || problems.length > 0) {
        rejected.push({ ...(ruleIdentity(raw) ?? { namespace: '', name: '' }), problems });
        continue;
      }
      add(rule);
    }
    const next = new Map<string, CompiledRule[]>();
    let count = 0;
    for (const [namespace, names] of byName) {
      const list = [...names.values()].flatMap(withItsVariants).sort(compareRules);
      next.set(namespace, list);
      count += names.size;
    }
    this.byNamespace = next;
    this.sharedRules = false;
    this.natively.clear();
    this.count = count;
    this.stale = 'all';
    this.rulesVersion++;
    this.changed();
    return rejected;
  }

  // Rules served natively (operator/native/controller.ts): the webhook holds their residual rule, or nothing, instead.
  private readonly natively = new Map<string, { full: CompiledRule; residual: CompiledRule | null }>();

  /** The rule held for namespace/name as compiled (never its residual); undefined when there is none. */
  ruleOf(namespace: string, name: string): CompiledRule | undefined {
    const native = this.natively.get(`${namespace}/${name}`);
    if (native) return native.full;
    return this.byNamespace.get(namespace)?.find((r) => r.name === name && !r.podController);
  }

  /**
   * Serves `rule` natively: the webhook keeps only `residual` (null: nothing) of it. Returns false, changing
   * nothing, when `rule` is not the version held now (a newer one arrived meanwhile).
   */
  serveNatively(rule: CompiledRule, residual: CompiledRule | null): boolean {
    const { namespace, name } = rule;
    if (this.ruleOf(namespace, name) !== rule) return false;
    const before = this.natively.get(`${namespace}/${name}`);
    if (before?.residual === residual) return true;
    if (before && !before.residual) this.count -= 1;
    this.natively.set(`${namespace}/${name}`, { full: rule, residual });
    this.writeRules(namespace, (list) => [
      ...list.filter((r) => r.name !== name),
      ...(residual ? withItsVariants(residual) : []),
    ]);
    // ruleCount counts rules, also those the webhook no longer holds.
    if (!residual) this.count += 1;
    return true;
  }

  /** The webhook serves the rule in full again (nothing to do when it already does). */
  serveByWebhook(namespace: string, name: string): void {
    const native = this.natively.get(`${namespace}/${name}`);
    if (!native) return;
    this.forgetNative(namespace, name);
    this.writeRules(namespace, (list) => [
      ...list.filter((r) => r.name !== name),
      ...withItsVariants(native.full),
    ]);
  }

  /** The rules served natively, by namespace/name; `partial`: the webhook still serves some objects of it. */
  nativeRules(): ReadonlyMap<string, { readonly partial: boolean }> {
    return new Map([...this.natively].map(([key, n]) => [key, { partial: n.residual !== null }]));
  }

  private forgetNative(namespace: string, name: string): void {
    const native = this.natively.get(`${namespace}/${name}`);
    if (!native) return;
    this.natively.delete(`${namespace}/${name}`);
    if (!native.residual) {
      this.count -= 1;
      this.changed();
    }
  }

  upsertNamespace(ns: JsonObject): void {
    const name = nameOf(ns);
    const before = name === undefined ? undefined : this.namespaces.get(name);
    if (!this.namespaces.set(ns)) return;
    this.labelsMayHaveChanged(name as string, before);
    this.changed();
  }

  deleteNamespace(name: string): void {
    const before = this.namespaces.get(name);
    if (!this.namespaces.delete(name)) return;
    this.labelsMayHaveChanged(name, before);
    this.changed();
  }

  replaceNamespaces(list: readonly JsonObject[]): void {
    const before = this.namespaces.view(); // replace() starts a new map, so this one stays as it is
    this.namespaces.replace(list);
    const names = new Set([...before.keys(), ...this.namespaces.view().keys()]);
    for (const name of names) this.labelsMayHaveChanged(name, before.get(name));
    this.changed();
  }

  // Cluster-wide rules are chosen by namespace labels (targetNamespaceSelector): a Namespace whose labels changed,
  // appeared or went away gets its rule list computed again; every other namespace keeps its memoized list.
  private labelsMayHaveChanged(name: string, before: JsonObject | undefined): void {
    if (this.stale === 'all') return;
    if (!sameLabels(namespaceLabels(before), namespaceLabels(this.namespaces.get(name))))
      this.stale.add(name);
  }

  upsertNode(node: JsonObject): void {
    if (this.nodes.set(node)) this.changed();
  }

  deleteNode(name: string): void {
    if (this.nodes.delete(name)) this.changed();
  }

  replaceNodes(list: readonly JsonObject[]): void {
    this.nodes.replace(list);
    this.changed();
  }

  /** Calls `listener` after every change; returns a function that unsubscribes it. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // Copy-on-write: snapshots keep the old Map and arrays; the store moves on to new ones.
  private writeRules(namespace: string, update: (list: readonly CompiledRule[]) => CompiledRule[]): void {
    const before = this.byNamespace.get(namespace) ?? [];
    // update() returns a new array, so a snapshot holding `before` keeps seeing it unchanged.
    const after = update(before).sort(compareRules);
    if (this.sharedRules) {
      this.byNamespace = new Map(this.byNamespace);
      this.sharedRules = false;
    }
    if (after.length === 0) this.byNamespace.delete(namespace);
    else this.byNamespace.set(namespace, after);
    this.count += modRules(after) - modRules(before);
    this.stale = 'all';
    this.rulesVersion++;
    this.changed();
  }

  private changed(): void {
    this.current = undefined;
    for (const l of this.listeners) {
      try {
        l();
      } catch {
        // A failing metrics listener must not break rule updates.
      }
    }
  }
}
