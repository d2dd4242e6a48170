import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import type { CompiledRule } from '../../rule/compile';
import { ReferenceObjects, ReferenceSource } from '../../store/references';
import { referencePlan } from '../../store/reference-plan';
import { RuleStore } from '../../store/rules';
import { KubeClient } from '../../kube/kube';
import { NamedWatches } from './named';
import { OwnerCaches, OwnerProblem } from './owners';
import { ResourceResolver } from './resources';
import { referenceProblems } from './status';
import { Controller } from '../controller/controller';

/*
 * The operator's reference caches (docs/references.md): what the rules in force read besides their object, kept by
 * watches of just the kinds and namespaces they name. The webhook and the background audit evaluate against the
 * same caches, and a request whose rules read something not listed yet waits for it (ReferenceSource.pending).
 */

export interface ReferenceCachesOptions {
  client: KubeClient;
  logger: Logger;
  store: RuleStore;
  /** Owner kinds read for syntheticRefs.owner (group/Kind, core: Kind); default DEFAULT_OWNER_KINDS. */
  ownerKinds?: readonly string[];
}

const PLAN = 'plan';
const STATUS = 'status';

/** The reference caches of one operator: a ReferenceSource over watches that follow the rules in force. */
export class ReferenceCaches implements ReferenceSource {
  readonly reader = new ReferenceObjects();
  private readonly named: NamedWatches;
  private readonly owners: OwnerCaches;
  private planned = -1;
  // What each rule met looking up owners (a kind not read), by namespace/name: its status says so.
  private readonly ownerProblems = new Map<string, Map<string, string>>();
  /** Keys: PLAN (the watches the rules need) and STATUS (what their status says, debounced). */
  private readonly work: Controller;
  private stopped = false;
  private readonly unsubscribe: Array<() => void> = [];
  private readonly statusListeners = new Set<() => void>();

  constructor(private readonly options: ReferenceCachesOptions) {
    const deps = {
      client: options.client,
      logger: options.logger,
      resolver: new ResourceResolver(options.client),
      changed: () => this.statusMayHaveChanged(),
    };
    this.work = new Controller(
      'reference caches',
      {
        reconcile: async (key) =>
          key === PLAN ? this.reconcile() : this.statusListeners.forEach((l) => l()),
      },
      { logger: options.logger },
    );
    this.named = new NamedWatches(this.reader, deps);
    this.owners = new OwnerCaches(this.reader, deps, options.ownerKinds);
    // Rule changes start and stop watches at once (not on the next request): a rule is in force when it is written.
    this.unsubscribe.push(
      options.store.onChange(() => this.work.enqueue(PLAN)),
      // Named objects coming and going change what rules find; owners' churn (status updates) does not.
      this.reader.onChange((_gk, feeder) => {
        if (feeder.startsWith('named:')) this.statusMayHaveChanged();
      }),
    );
  }

  /** Calls `listener` (debounced) when what the rules' status should say about their references may have changed. */
  onStatusChange(listener: () => void): () => void {
    this.statusListeners.add(listener);
    return () => void this.statusListeners.delete(listener);
  }

  /** Starts the watches the rules held now need. */
  start(): void {
    this.work.start();
    this.reconcile();
  }

  pending(
    rules: readonly CompiledRule[],
    object: JsonObject,
    namespace: string | null,
  ): Promise<void> | undefined {
    this.reconcile();
    const waits: Promise<void>[] = [];
    let levels = 0;
    for (const rule of rules) {
      const refs = rule.references;
      if (!refs) continue;
      for (const decl of refs.named) {
        if (this.named.state(decl).state !== 'pending') continue;
        const wait = this.named.settled(decl);
        if (wait) waits.push(wait);
      }
      levels = Math.max(levels, refs.owner.levels);
    }
    if (levels > 0) {
      const problems: OwnerProblem[] = [];
      const wait = this.owners.pending(object, namespace ?? '', levels, problems);
      if (wait) waits.push(wait.then(() => this.noteOwnerProblems(rules, problems)));
      else this.noteOwnerProblems(rules, problems);
    }
    if (waits.length === 0) return undefined;
    return Promise.all(waits).then(() => undefined);
  }

  /** What a rule's status says about its references: one line per reference that is missing or cannot be read. */
  problemsOf(rule: CompiledRule): string[] {
    return referenceProblems(rule, (d) => this.named.state(d), this.ownerProblems.get(rule.key));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    await Promise.all([this.work.stop(), this.named.stop(), this.owners.stop()]);
  }

  /** Starts and stops watches to what the rules in force need (also called before a request waits on them). */
  private reconcile(): void {
    const { store } = this.options;
    if (this.stopped || store.rulesVersion === this.planned) return;
    this.planned = store.rulesVersion;
    const plan = referencePlan(
      store.allRules().filter((r) => r.references),
      store.clusterNamespace,
    );
    this.named.reconcile(plan.named);
    this.owners.reconcile(plan.owners);
    for (const key of this.ownerProblems.keys()) {
      const [ns, name] = key.split('/');
      if (!store.ruleOf(ns, name)?.references?.owner.levels) this.ownerProblems.delete(key);
    }
    this.statusMayHaveChanged();
  }

  private noteOwnerProblems(rules: readonly CompiledRule[], problems: readonly OwnerProblem[]): void {
    if (problems.length === 0) return;
    let changed = false;
    for (const rule of rules) {
      if (!rule.references?.owner.levels) continue;
      let seen = this.ownerProblems.get(rule.key);
      if (!seen) this.ownerProblems.set(rule.key, (seen = new Map()));
      for (const p of problems) {
        if (seen.get(p.kind) === p.why || seen.size >= 8) continue;
        seen.set(p.kind, p.why);
        changed = true;
      }
    }
    if (changed) this.statusMayHaveChanged();
  }

  private statusMayHaveChanged(): void {
    if (!this.stopped && this.statusListeners.size > 0) this.work.enqueueDebounced(STATUS, 100, 100);
  }
}
