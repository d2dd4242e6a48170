import type { CompiledRule } from '../rule/compile';
import { Decline, declineOf } from '../native';

/*
 * Rules served natively whose webhook part is a residual rule (the objects their policy's guards decline): the scope
 * sends their objects only where a guard declines, when the guards can be checked before the call, and says per
 * rule when they cannot (the rule's status tells the user: every object of it still reaches the webhook).
 */

/** A rule's part in the registration: null, its guards are checked before the call; else why they are not. */
export type NativeOutcome = string | null;

/** The declines of the residual rules of one computation, and each rule's outcome. */
export class NativeShares {
  /** By rule key (namespace/name), for every residual rule seen. */
  readonly outcomes = new Map<string, NativeOutcome>();
  private readonly byDecline = new Map<string, string[]>();

  /** `guards`: whether the registration may check objects (false: the API server refused conditions that do). */
  constructor(private readonly guards: boolean) {}

  /** The decline to send the rule's objects by; null: every object it may act on. */
  declineOf(rule: CompiledRule): Decline | null {
    const outcome = declineOf(rule);
    if (!outcome) return null;
    if (!this.guards) {
      this.outcomes.set(
        rule.key,
        'the dragnet registration checks no objects before the call (the API server refused conditions that do)',
      );
      return null;
    }
    if ('why' in outcome) {
      this.outcomes.set(rule.key, outcome.why);
      return null;
    }
    this.outcomes.set(rule.key, null);
    const rules = this.byDecline.get(outcome.decline.cel);
    if (rules) rules.push(rule.key);
    else this.byDecline.set(outcome.decline.cel, [rule.key]);
    return outcome.decline;
  }

  /** Declines the coarsening dropped: their rules' outcome, and the message for the scope's log. */
  dropped(declines: readonly Decline[], why: string): string {
    const rules = declines.flatMap((d) => this.byDecline.get(d.cel) ?? []);
    for (const r of rules) this.outcomes.set(r, why);
    const named = rules.slice(0, 3).join(', ') + (rules.length > 3 ? `, and ${rules.length - 3} more` : '');
    return `the guards of ${rules.length} native rule(s) (${named}) are not checked before the call: ${why}`;
  }
}
