import { ScopeResult } from '../../scope/compute';
import { NativeScope } from '../native/status';

/*
 * What the live dragnet registration does for each rule served natively, from the computation it was written from
 * (scope/compute.ts: the rule's guards checked before the call, or why every object of it still reaches the webhook).
 * The native controller words it into the rule's Ready message.
 */

/** The dragnet registration's part for native rules, as last confirmed live. */
export class NativeScopes {
  private outcomes: ScopeResult['native'] | null = null;
  private wide: string | null = null;
  private readonly listeners = new Set<() => void>();

  /**
   * The registration now live was computed as `result`; null: it is the configured net (`givenUp`: the operator
   * stopped narrowing it, else wide mode).
   */
  confirm(result: ScopeResult | null, givenUp: boolean): void {
    const before = JSON.stringify([this.wide, [...(this.outcomes ?? [])]]);
    this.outcomes = result ? result.native : null;
    this.wide = result
      ? null
      : givenUp
        ? 'the API server stored another registration than the one written; the configured net is back'
        : 'the operator runs with --dragnet-scope wide';
    if (JSON.stringify([this.wide, [...(this.outcomes ?? [])]]) !== before)
      for (const l of this.listeners) l();
  }

  /** For a rule (namespace/name): see NativeScope. */
  of(rule: string): NativeScope {
    if (this.wide !== null) return this.wide;
    return this.outcomes?.get(rule);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
