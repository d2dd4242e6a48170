import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Gauge, Registry } from 'prom-client';
import { CompiledRule } from '../../rule/compile';
import { RuleStore } from '../../store/rules';
import { originalOf } from '../../native';
import { conflictSteps, ConflictResult } from '../../conflict/find';
import { Conflict, ConflictKind } from '../../conflict/types';
import { Logger, silentLogger } from '../../util/logger';
import { Controller } from '../controller/controller';
import { objectKey, splitKey } from '../../util/meta';
import { Facet, StatusFacets } from './facets';

// Rules in conflict with each other (conflict/), as the cluster has them: the condition Conflicting on each rule
// of a conflict naming the other one (both run, in tier and name order, as KubeMod runs them: see
// docs/conflicts.md), the gauges modrule_rules_conflicting and modrule_rule_conflicts{kind}. The check runs after
// the rules change (debounced), in slices of the event loop, so neither the rule sync nor the webhook waits for it.
// Every replica computes the same from the same rules: the condition is not a per-replica word.

/** The condition's reason for each kind of conflict. */
export const CONFLICT_REASONS: Record<ConflictKind, string> = {
  value: 'SameTierValues',
  shape: 'ListOrObject',
  idempotence: 'NotIdempotent',
  'reject-after-patch': 'RejectsPatched',
};

/** How many conflicts a rule's condition spells out before "and N more". */
const LISTED = 3;

/** The Conflicting facet of a rule with these conflicts (each naming the other rule, when there is one). */
export function conflictFacet(conflicts: readonly Conflict[]): Facet {
  const listed = conflicts.slice(0, LISTED).map((c) => c.message);
  const more = conflicts.length - listed.length;
  return {
    condition: {
      type: 'Conflicting',
      reason: CONFLICT_REASONS[conflicts[0].kind],
      message:
        `in conflict: ${conflicts.length === 1 ? 'one conflict' : `${conflicts.length} conflicts`} found. ` +
        `${listed.join('. ')}${more > 0 ? `. And ${more} more` : ''}. Both rules still run, in tier and name order`,
    },
  };
}

export interface ConflictStatusOptions {
  store: RuleStore;
  status: StatusFacets | null;
  registry?: Registry;
  clusterNamespace: string;
  /** Quiet time after a rule change before checking; default 1 s (at most 10 s under a stream of changes). */
  quietMs?: number;
  /** Longest slice of the event loop one step of the check takes before yielding; default 5 ms. */
  sliceMs?: number;
  logger?: Logger;
}

/** The one key of the check's work queue: every rule change asks for the same check of all rules in force. */
const CHECK_KEY = 'rules in force';

/** Checks the rules in force for conflicts and shows them on the rules. */
export class ConflictStatus {
  private readonly shown = new Map<string, string>();
  /** Runs the check one at a time, debounced after rule changes (the operator's one controller shape). */
  private readonly controller: Controller;
  private readonly rules: Gauge | null;
  private readonly byKind: Gauge<'kind'> | null;
  private readonly duration: Gauge | null;
  private unsubscribe: () => void = () => undefined;
  private stopped = false;
  /** The last check's result (tests, and the longest slice it took). */
  last: (ConflictResult & { longestSliceMs: number }) | null = null;

  constructor(private readonly options: ConflictStatusOptions) {
    this.controller = new Controller(
      'conflict check',
      { reconcile: () => this.check() },
      { logger: options.logger ?? silentLogger() },
    );
    const registers = options.registry ? [options.registry] : undefined;
    this.rules = registers
      ? new Gauge({
          name: 'modrule_rules_conflicting',
          help: 'ModRules whose Conflicting condition is True: in conflict with another rule, or with themselves.',
          registers,
        })
      : null;
    this.byKind = registers
      ? new Gauge({
          name: 'modrule_rule_conflicts',
          help: 'Conflicts between the ModRules in force, by kind (value|shape|idempotence|reject-after-patch).',
          labelNames: ['kind'],
          registers,
        })
      : null;
    this.duration = registers
      ? new Gauge({
          name: 'modrule_conflict_check_seconds',
          help: 'How long the last conflict check of the rules in force took (CPU in slices; wall time).',
          registers,
        })
      : null;
  }

  start(): void {
    const later = () => this.controller.enqueueDebounced(CHECK_KEY, this.options.quietMs ?? 1_000, 10_000);
    this.unsubscribe = this.options.store.onChange(later);
    later();
    this.controller.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    await this.controller.stop();
  }

  /** Checks now (tests, not started); resolves when the check and its status updates are done. */
  async checkNow(): Promise<void> {
    await this.check();
  }

  // A check that throws (it is pure; it should not) leaves the status as it was; it is not retried.
  private async check(): Promise<void> {
    try {
      await this.checkInSlices();
    } catch {
      this.last = null;
    }
  }

  private async checkInSlices(): Promise<void> {
    const started = performance.now();
    const steps = conflictSteps(this.inForce(), { clusterNamespace: this.options.clusterNamespace });
    const sliceMs = this.options.sliceMs ?? 5;
    let longest = 0;
    for (;;) {
      const slice = performance.now();
      let next = steps.next();
      while (!next.done && performance.now() - slice < sliceMs) next = steps.next();
      longest = Math.max(longest, performance.now() - slice);
      if (next.done) {
        this.last = { ...next.value, longestSliceMs: longest };
        break;
      }
      await yieldToEventLoop();
      if (this.stopped) return;
    }
    this.show(this.last.conflicts);
    this.duration?.set((performance.now() - started) / 1000);
  }

  /** Every rule in force, in full: a rule served natively is still a rule (its residual is not). */
  private inForce(): CompiledRule[] {
    const { store } = this.options;
    const rules = new Map(store.allRules().map((r) => [r.key, originalOf(r)]));
    for (const key of store.nativeRules().keys()) {
      const { namespace, name } = splitKey(key);
      const full = store.ruleOf(namespace, name);
      if (full) rules.set(key, full);
    }
    return [...rules.values()];
  }

  /** Sets the facet of each rule in a conflict, and clears it on the rules no longer in one. */
  private show(conflicts: readonly Conflict[]): void {
    const byRule = new Map<string, Conflict[]>();
    for (const c of conflicts)
      for (const r of c.other ? [c.rule, c.other] : [c.rule]) {
        const key = objectKey(r.namespace, r.name);
        byRule.set(key, [...(byRule.get(key) ?? []), c]);
      }
    const { status } = this.options;
    for (const [key, list] of byRule) {
      const facet = conflictFacet(list);
      const message = facet.condition!.message;
      if (this.shown.get(key) === message) continue;
      this.shown.set(key, message);
      const { namespace, name } = splitKey(key);
      status?.set(namespace, name, 'conflicts', facet);
    }
    for (const key of [...this.shown.keys()])
      if (!byRule.has(key)) {
        this.shown.delete(key);
        const { namespace, name } = splitKey(key);
        status?.clear(namespace, name, 'conflicts');
      }
    this.rules?.set(byRule.size);
    this.byKind?.reset();
    for (const kind of Object.keys(CONFLICT_REASONS) as ConflictKind[])
      this.byKind?.set({ kind }, conflicts.filter((c) => c.kind === kind).length);
  }
}
