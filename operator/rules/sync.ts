import { jsonEqual, JsonObject, JsonValue } from '../../util/json';
import { CompiledRule } from '../../rule/compile';
import { Logger } from '../../util/logger';
import { formatProblems, ValidationProblem } from '../../rule/problems';
import { referenceScopes } from '../../rule/references';
import { MODRULE_API_VERSION, MODRULE_KIND } from '../../rule/types';
import { RuleStore } from '../../store/rules';
import { BackoffOptions } from '../../kube/backoff';
import { Informer, InformerHandlers } from '../../kube/informer';
import { KubeClient } from '../../kube/kube';
import { StatusSink } from '../status/reporter';
import { MODRULES_PATH } from '../../kube/owned';
import { nameOf, namespaceOf, objectKey, metadataOf } from '../../util/meta';

export const NAMESPACES_PATH = '/api/v1/namespaces';
export const NODES_PATH = '/api/v1/nodes';

export interface ClusterSyncOptions {
  client: KubeClient;
  store: RuleStore;
  logger: Logger;
  /** Where Ready conditions and events go; null to write nothing back (read-only runs). */
  status: StatusSink | null;
  backoff?: BackoffOptions;
  watchTimeoutSeconds?: number;
  /** Told about every ModRule after the store took it (operator/native/controller.ts). */
  observer?: InformerHandlers;
}

interface Seen {
  uid: JsonValue;
  spec: JsonValue;
  /** What discovery said of the scope of the kinds its references name when it was compiled (referenceScopes). */
  scopes: string;
  problems: readonly ValidationProblem[];
  /** The rule as last delivered, kept only when it has references: discovery may ask to compile it again. */
  source: JsonObject | null;
}

/**
 * Feeds the rule store from the cluster: ModRules (all namespaces), Namespaces and Nodes, each by its own
 * informer. Ready once all three have delivered their first full list.
 */
export class ClusterSync {
  private readonly informers: Informer[];
  // Last spec compiled per rule: status-only updates (our own writes) and relists then skip recompiling.
  private readonly seen = new Map<string, Seen>();
  private readonly rules: InformerHandlers;
  /** Resolves when all three initial lists are in. */
  readonly synced: Promise<void>;

  constructor(private readonly options: ClusterSyncOptions) {
    const { client, logger } = options;
    this.rules = this.ruleHandlers();
    const common = {
      client,
      logger,
      backoff: options.backoff,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
    };
    this.informers = [
      new Informer({
        ...common,
        path: MODRULES_PATH,
        apiVersion: MODRULE_API_VERSION,
        kind: MODRULE_KIND,
        handlers: this.rules,
      }),
      new Informer({
        ...common,
        path: NAMESPACES_PATH,
        apiVersion: 'v1',
        kind: 'Namespace',
        handlers: this.namespaceHandlers(),
      }),
      new Informer({
        ...common,
        path: NODES_PATH,
        apiVersion: 'v1',
        kind: 'Node',
        handlers: this.nodeHandlers(),
      }),
    ];
    this.synced = Promise.all(this.informers.map((i) => i.synced)).then(() => undefined);
  }

  start(): void {
    for (const i of this.informers) i.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** Per resource: synced yet, and how many full lists so far (metrics). */
  informerStates(): Array<{ resource: string; synced: boolean; lists: number }> {
    const names = ['modrules', 'namespaces', 'nodes'];
    return this.informers.map((i, n) => ({ resource: names[n], synced: i.hasSynced(), lists: i.listCount }));
  }

  /** The ModRule resourceVersion the store has caught up with; null before the first list. */
  rulesVersion(): string | null {
    return this.informers[0].resourceVersion;
  }

  /** True once ModRules, Namespaces and Nodes have all been listed. */
  isReady(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  private ruleHandlers(): InformerHandlers {
    const { store, logger, status } = this.options;
    const logInvalid = (ns: string, name: string, problems: readonly ValidationProblem[]) =>
      logger.warn('invalid ModRule skipped', { namespace: ns, name, problems: formatProblems(problems) });
    return {
      replace: (items) => {
        const { kept, fresh, rejected } = this.sortRelist(items);
        for (const r of store.replaceRules(fresh, kept))
          rejected.set(objectKey(r.namespace, r.name), r.problems);
        this.seen.clear();
        for (const item of items) {
          const [namespace, name] = [namespaceOf(item), nameOf(item)];
          const key = objectKey(namespace, name);
          const problems = rejected.get(key) ?? [];
          if (problems.length > 0) logInvalid(namespace, name, problems);
          this.seen.set(key, this.seenOf(item, problems));
          status?.report(item, problems);
        }
        logger.info('ModRules loaded', {
          rules: store.snapshot().ruleCount,
          invalid: rejected.size,
          kept: kept.length,
        });
        this.options.observer?.replace(items);
      },
      upsert: (obj) => {
        const [namespace, name] = [namespaceOf(obj), nameOf(obj)];
        const key = objectKey(namespace, name);
        const previous = this.seen.get(key);
        let problems: readonly ValidationProblem[];
        if (previous && this.unchanged(previous, obj)) {
          problems = previous.problems;
          if (previous.source) previous.source = obj;
        } else {
          problems = store.upsertRule(obj);
          this.seen.set(key, this.seenOf(obj, problems));
          if (problems.length > 0) logInvalid(namespace, name, problems);
          else logger.info('ModRule updated', { namespace, name });
        }
        status?.report(obj, problems);
        this.options.observer?.upsert(obj);
      },
      remove: (obj) => {
        const [namespace, name] = [namespaceOf(obj), nameOf(obj)];
        store.deleteRule(namespace, name);
        this.seen.delete(objectKey(namespace, name));
        status?.forget(namespace, name);
        logger.info('ModRule deleted', { namespace, name });
        this.options.observer?.remove(obj);
      },
    };
  }

  /**
   * A relist (410 Gone, an API server restart) hands over every ModRule again. A rule seen before with the same
   * uid and spec is the same version: it keeps the compiled rule the store holds (and an invalid one its
   * problems), so what is recorded against that rule (run-time failures, quarantine) survives; the others are
   * compiled anew.
   */
  private sortRelist(items: readonly JsonObject[]): {
    kept: CompiledRule[];
    fresh: JsonObject[];
    rejected: Map<string, readonly ValidationProblem[]>;
  } {
    const { store } = this.options;
    const kept: CompiledRule[] = [];
    const fresh: JsonObject[] = [];
    const rejected = new Map<string, readonly ValidationProblem[]>();
    for (const item of items) {
      const [namespace, name] = [namespaceOf(item), nameOf(item)];
      const key = objectKey(namespace, name);
      const previous = this.seen.get(key);
      const same = previous !== undefined && this.unchanged(previous, item);
      const held = same && previous.problems.length === 0 ? store.ruleOf(namespace, name) : undefined;
      if (held) kept.push(held);
      else if (same && previous.problems.length > 0) rejected.set(key, previous.problems);
      else fresh.push(item);
    }
    return { kept, fresh, rejected };
  }

  /**
   * Compiles again the rules whose references name a kind whose scope discovery now answers otherwise (a CRD
   * installed, changed or deleted since): a namespaced rule that now reads a cluster-scoped kind becomes invalid,
   * and a cluster-namespace rule reads it cluster-wide.
   */
  rescope(): void {
    const policy = this.options.store.referencePolicy;
    for (const seen of [...this.seen.values()])
      if (seen.source && referenceScopes(seen.source.spec, policy) !== seen.scopes)
        this.rules.upsert(seen.source);
  }

  /**
   * Whether `obj` is the version of a ModRule seen before: same uid (not deleted and created again), same spec,
   * and its references' kinds of the same scope. Not the resourceVersion: status writes (our own conditions) move
   * it, most of all on the rules that fail.
   */
  private unchanged(seen: Seen, obj: JsonObject): boolean {
    return (
      seen.uid === (metadataOf(obj).uid ?? null) &&
      jsonEqual(seen.spec, obj.spec ?? null) &&
      seen.scopes === referenceScopes(obj.spec, this.options.store.referencePolicy)
    );
  }

  private seenOf(obj: JsonObject, problems: readonly ValidationProblem[]): Seen {
    const scopes = referenceScopes(obj.spec, this.options.store.referencePolicy);
    const uid = metadataOf(obj).uid ?? null;
    return { uid, spec: obj.spec ?? null, scopes, problems, source: scopes === '' ? null : obj };
  }

  private namespaceHandlers(): InformerHandlers {
    const { store } = this.options;
    return {
      replace: (items) => store.replaceNamespaces(items),
      upsert: (obj) => store.upsertNamespace(obj),
      remove: (obj) => store.deleteNamespace(nameOf(obj)),
    };
  }

  private nodeHandlers(): InformerHandlers {
    const { store } = this.options;
    return {
      replace: (items) => store.replaceNodes(items),
      upsert: (obj) => store.upsertNode(obj),
      remove: (obj) => store.deleteNode(nameOf(obj)),
    };
  }
}
