import type { CompiledRule } from '../rule/compile';

/**
 * The kinds of conflict found between rules (docs/conflicts.md):
 * - value: two rules of one tier that can match the same object write different values to the same path;
 * - shape: one rule writes a path as a list and another as an object (or a scalar);
 * - idempotence: a rule applied to its own result changes the object again (it grows on every update);
 * - reject-after-patch: a Reject rule rejects what a Patch rule produced.
 */
export type ConflictKind = 'value' | 'shape' | 'idempotence' | 'reject-after-patch';

/** One conflict: the rule that runs first, the other (none for idempotence), the path and what happens. */
export interface Conflict {
  readonly kind: ConflictKind;
  readonly rule: CompiledRule;
  readonly other?: CompiledRule;
  /** The JSON pointer the conflict is about (list positions as `*`). */
  readonly path: string;
  /** Where in each rule: `spec.patch[1]`, `spec.match`. */
  readonly field: string;
  readonly otherField?: string;
  /** The kinds of object it happens on ('any kind' when the rules name none). */
  readonly on: string;
  /** One sentence naming both rules, the path and what happens. */
  readonly message: string;
}

/** What a check over a set of rules cost. */
export interface ConflictStats {
  readonly rules: number;
  /** Rule pairs compared (the indexes keep this far below every pair). */
  readonly pairs: number;
  /** Rules run on witnesses (idempotence, reject-after-patch). */
  readonly runs: number;
  /** Checks left out because the run budget was spent. */
  readonly skipped: number;
  readonly ms: number;
}

/** How to check. */
export interface ConflictOptions {
  /** The namespace of cluster-wide rules (default kubemod-system). */
  readonly clusterNamespace?: string;
  /** Most rule runs on witnesses in one check (default 20,000): bounds the time whatever the rules. */
  readonly maxRuns?: number;
  /** Most pairs compared per path (default 10,000): one path written by thousands of rules stays bounded. */
  readonly maxPairsPerPath?: number;
}
