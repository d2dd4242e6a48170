import { createHash } from 'node:crypto';
import { Counter, Registry } from 'prom-client';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { JsonObject } from '../../util/json';
import { generationOf, metaString, nameOf, namespaceOf, objectKey } from '../../util/meta';
import { CompiledRule } from '../../rule/compile';
import { StoreFreshness } from '../../webhook/rule-admission';
import { InformerHandlers } from '../../kube/informer';
import { KubeApiError, KubeClient } from '../../kube/kube';

/** Which ModRule version was admitted: what the store must have before it answers for the objects it may reach. */
export interface RuleVersion {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
  /** specDigest of the ModRule as admitted (writes of one version admitted at once may differ). */
  spec?: string;
}

/** A short digest of a ModRule's spec: tells apart two writes admitted at the same uid and generation. */
export function specDigest(rule: JsonObject | null | undefined): string | undefined {
  const spec = rule?.spec;
  if (spec === undefined) return undefined;
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
}

interface Pending extends RuleVersion {
  /** Null for a rule a peer replica admitted: held for, not counted in this replica's scope. */
  rule: CompiledRule | null;
  at: number;
  /**
   * By when its admission is answered (the API server stores the rule only after that): undefined while this
   * replica's own admission runs; a peer's is the time the notice said it may still take.
   */
  answerBy?: number;
  waiters: Set<() => void>;
  timer: NodeJS.Timeout | null;
}

/** Specs of one rule version counted at most (writes of one version admitted at the same time). */
const MAX_SPECS = 4;
/** The longest an admission can run (the API server's webhook timeout is at most 30 s). */
const MAX_ADMISSION_MS = 30_000;

export interface AdmittedRulesOptions {
  client: KubeClient;
  logger: Logger;
  clusterNamespace: string;
  registry?: Registry;
  /** A rule the store has not seen this long after its admission is looked up; absent: dropped. Default 1 s. */
  checkAfterMs?: number;
  /** The longest a rule stays pending (its write landed, but the store does not show it); default 10 s. */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * The ModRules this replica admitted that its store has not seen yet. The API server stores a rule after the
 * validating webhook allowed it, and the informer brings it a moment later: meanwhile the dragnet would answer from a
 * store without it. So dragnet requests that such a rule could reach (its namespace; any, for a rule in the cluster
 * namespace) wait until the store has its uid at that generation or newer, within their budget. A rule whose write
 * never lands (another webhook refused it, a conflict) is dropped once a read shows it absent or older, or after
 * maxAgeMs. The scope computations count pending rules as in force, so nothing narrows them away meanwhile.
 */
export class AdmittedRules implements StoreFreshness {
  /**
   * Per rule (namespace/name), every version admitted and not stored yet, oldest first: an edit admitted before the
   * store has the version before it does not end the wait for that one (the write of each returned).
   */
  private readonly pending = new Map<string, Pending[]>();
  /** Generations the store has reached, by uid (the store's own view, for decide() of other replicas' stamps). */
  private readonly storedGenerations = new Map<string, number>();
  private readonly listeners = new Set<() => void>();
  private readonly waits: Counter<'result'> | null;
  private stopped = false;

  constructor(private readonly options: AdmittedRulesOptions) {
    this.waits = options.registry
      ? new Counter({
          name: 'modrule_dragnet_store_waits_total',
          help: 'Dragnet requests held until the store saw a ModRule admitted a moment ago, by result (caught_up|timed_out).',
          labelNames: ['result'],
          registers: [options.registry],
        })
      : null;
    // Both series exist from the start, so the first wait is an increase Prometheus (and the dashboard) can see.
    for (const result of ['caught_up', 'timed_out']) this.waits?.inc({ result }, 0);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /**
   * Records a rule admitted (valid, not a dry run) by this replica (`rule` compiled) or a peer (`rule` null), unless
   * the store already has that version; `answerWithinMs`: how long its admission may still run (a duration, so that
   * a peer's clock need not agree with this one's).
   */
  admit(version: RuleVersion, rule: CompiledRule | null, answerWithinMs?: number): void {
    if (this.stopped || this.landed(version.uid, version.generation)) return;
    const key = objectKey(version.namespace, version.name);
    const list = this.pending.get(key) ?? [];
    const same = list.filter((p) => p.uid === version.uid && p.generation === version.generation);
    // A notice of a version known here adds nothing; a spec of it not counted yet does (two writes of one version
    // admitted at once: either may be the one the API server stores, the other losing with a 409).
    const sameSpec = (p: Pending) => p.rule === rule || (!!version.spec && p.spec === version.spec);
    if (same.length > 0 && (!rule || same.some(sameSpec) || same.length >= MAX_SPECS)) {
      for (const p of same) if (!p.rule && (!p.spec || p.spec === version.spec)) p.rule = rule;
      return;
    }
    const at = this.now();
    const answerBy = answerWithinMs === undefined ? undefined : at + answerWithinMs;
    const entry: Pending = { ...version, rule, at, answerBy, waiters: new Set(), timer: null };
    entry.timer = setTimeout(() => void this.check(key, entry), this.options.checkAfterMs ?? 1000);
    entry.timer.unref();
    this.pending.set(key, [...list, entry]);
  }

  /** The admission of a rule version was answered (here, or a peer's notice says so): it lands now, or never. */
  answered(version: RuleVersion): void {
    const key = objectKey(version.namespace, version.name);
    // The API server stores the rule a moment after the answer: absence counts only from a look-up interval later.
    const by = this.now() + (this.options.checkAfterMs ?? 1000);
    for (const p of this.pending.get(key) ?? [])
      if (p.uid === version.uid && p.generation === version.generation)
        p.answerBy = Math.min(p.answerBy ?? by, by);
  }

  /** Whether this version is pending here (its write awaited). */
  pendingVersion(version: RuleVersion): boolean {
    const key = objectKey(version.namespace, version.name);
    return (this.pending.get(key) ?? []).some(
      (p) => p.uid === version.uid && p.generation === version.generation,
    );
  }

  /**
   * Whether a generation of the rule (uid) newer than `generation` was admitted (here or by a peer) and has neither
   * landed nor failed yet: an edit in flight (the native controller writes nothing for the rule meanwhile).
   */
  editPending(namespace: string, name: string, uid: string, generation: number): boolean {
    return (this.pending.get(objectKey(namespace, name)) ?? []).some(
      (p) => p.uid === uid && p.generation > generation,
    );
  }

  /** Stops waiting for a rule version whose write was refused (the versions before it are still awaited). */
  forget(version: RuleVersion): void {
    const key = objectKey(version.namespace, version.name);
    for (const p of this.pending.get(key) ?? [])
      if (p.uid === version.uid && p.generation === version.generation) this.settle(key, p);
  }

  /** The store took this version of a rule (every ModRule the informers deliver). */
  sawStored(namespace: string, name: string, uid: string, generation: number): void {
    if (uid) this.storedGenerations.set(uid, Math.max(generation, this.storedGenerations.get(uid) ?? 0));
    const key = objectKey(namespace, name);
    for (const p of this.pending.get(key) ?? [])
      if (p.uid === uid && generation >= p.generation) this.settle(key, p);
  }

  /** A rule left the store: every version of it counts as seen (a stamp may still name one). */
  removed(uid: string): void {
    if (this.storedGenerations.size >= 100_000) this.storedGenerations.clear();
    if (uid) this.storedGenerations.set(uid, Number.MAX_SAFE_INTEGER);
    for (const [key, list] of this.pending) for (const p of list) if (p.uid === uid) this.settle(key, p);
  }

  /** Every version pending now, oldest first per rule. */
  private entries(): Pending[] {
    return [...this.pending.values()].flat();
  }

  /** What the store took, as ClusterSync's observer sees it (after the store). */
  handlers(): InformerHandlers {
    const take = (obj: JsonObject) =>
      this.sawStored(namespaceOf(obj), nameOf(obj), metaString(obj, 'uid'), generationOf(obj) ?? 0);
    return {
      replace: (items) => {
        this.storedGenerations.clear();
        items.forEach(take);
      },
      upsert: take,
      remove: (obj) => this.removed(metaString(obj, 'uid')),
    };
  }

  /** Whether the store has this uid at this generation or newer. */
  landed(uid: string, generation: number): boolean {
    return (this.storedGenerations.get(uid) ?? -1) >= generation;
  }

  /**
   * Whether this replica's scope computations count this rule version: its store has it (or newer), or it is one of
   * the rules it admitted itself.
   */
  knows(uid: string, generation: number, spec?: string): boolean {
    if (this.landed(uid, generation)) return true;
    return this.entries().some(
      (p) =>
        p.rule &&
        p.uid === uid &&
        (p.generation > generation ||
          (p.generation === generation && (spec === undefined || p.spec === undefined || p.spec === spec))),
    );
  }

  /** The pending rules, compiled (every spec admitted and not stored yet): the scope counts them in force. */
  rules(): CompiledRule[] {
    return [...new Set(this.entries().flatMap((p) => (p.rule ? [p.rule] : [])))];
  }

  /** The pending rules' versions (the stamp of a registration widened for them). */
  versions(): RuleVersion[] {
    return this.entries().flatMap(({ namespace, name, uid, generation, spec, rule }) =>
      rule ? [{ namespace, name, uid, generation, ...(spec ? { spec } : {}) }] : [],
    );
  }

  /** Calls `listener` when a rule leaves the pending set (stored, or given up: the scope may narrow again). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  until(namespace: string, budgetMs: number): Promise<void> | null {
    if (this.pending.size === 0) return null;
    const cluster = this.options.clusterNamespace;
    const reaching = this.entries().filter((p) => p.namespace === namespace || p.namespace === cluster);
    if (reaching.length === 0) return null;
    return new Promise<void>((resolve) => {
      let left = reaching.length;
      const timer = setTimeout(() => finish('timed_out'), Math.max(0, budgetMs));
      const done = () => {
        if (--left === 0) finish('caught_up');
      };
      const finish = (result: 'caught_up' | 'timed_out') => {
        clearTimeout(timer);
        for (const p of reaching) p.waiters.delete(done);
        if (left >= 0) this.waits?.inc({ result });
        left = -1;
        resolve();
      };
      for (const p of reaching) p.waiters.add(done);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const [key, list] of this.pending) for (const p of list) this.settle(key, p);
  }

  private isPending(key: string, p: Pending): boolean {
    return this.pending.get(key)?.includes(p) ?? false;
  }

  private settle(key: string, p: Pending): void {
    const list = this.pending.get(key);
    if (!list?.includes(p)) return;
    const rest = list.filter((q) => q !== p);
    if (rest.length > 0) this.pending.set(key, rest);
    else this.pending.delete(key);
    if (p.timer) clearTimeout(p.timer);
    for (const w of [...p.waiters]) w();
    this.changed();
  }

  /** Looks the rule up: its write never landed (absent, another uid, an older generation) drops it. */
  private async check(key: string, p: Pending): Promise<void> {
    if (!this.isPending(key, p)) return;
    const path = `/apis/api.kubemod.io/v1beta1/namespaces/${encodeURIComponent(p.namespace)}/modrules/${encodeURIComponent(p.name)}`;
    let landed = true;
    try {
      const got = await this.options.client.request('GET', path);
      landed = metaString(got, 'uid') === p.uid && (generationOf(got) ?? 0) >= p.generation;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) landed = false;
      else
        this.options.logger.debug('cannot look up an admitted ModRule', { rule: key, error: messageOf(err) });
    }
    if (!this.isPending(key, p)) return;
    const now = this.now();
    // Its admission is still running: absent, or another object under its name, says nothing yet (a widening and its
    // probes can take seconds, and the other object may be deleted before this create lands: the simulation's seed 66).
    const answering = p.answerBy === undefined ? now - p.at < MAX_ADMISSION_MS : now < p.answerBy;
    const age = now - (p.answerBy ?? p.at);
    if ((!landed && !answering) || age >= (this.options.maxAgeMs ?? 10_000)) {
      if (landed)
        this.options.logger.warn(
          'the store has not seen an admitted ModRule in time; no longer waiting for it',
          {
            rule: key,
            generation: p.generation,
          },
        );
      else
        this.options.logger.debug('an admitted ModRule version never landed; no longer waiting for it', {
          rule: key,
          uid: p.uid,
          generation: p.generation,
        });
      this.settle(key, p);
      return;
    }
    p.timer = setTimeout(() => void this.check(key, p), this.options.checkAfterMs ?? 1000);
    p.timer.unref();
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
