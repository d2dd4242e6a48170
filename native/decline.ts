import { isJsonObject, JsonValue } from '../util/json';
import type { CompiledRule } from '../rule/compile';
import { guardCelCost } from './cel-cost';
import { Guard, GuardCost } from './guard';
import { residualGuards } from './residual';

/*
 * The dragnet webhook's side of a rule served natively with a residual: the API server calls the webhook for the
 * rule's objects only where a guard declines (the policy leaves such an object to the webhook's residual rule). The
 * guards are CEL already, but as a webhook match condition they must meet two more demands:
 * - never fail to evaluate: under the dragnet's failurePolicy Ignore an error skips the webhook, and an object the
 *   residual rule should have patched would be admitted unpatched. The guards' conjunction is what the policy
 *   evaluates as its own match condition, where an error would refuse the request; CEL's && is commutative for
 *   errors (false wins over an error wherever it stands), so the same conjunction, in any order, cannot fail here;
 * - stay within the cost budget the API server gives one webhook's match conditions per request (2,500,000 units,
 *   shared by all of them; running out skips the webhook too). The guards are ordered cheapest first, and && stops
 *   at the first false from the left: a list is iterated only after its size guard held, text is built only from
 *   values whose length guard held. The estimate below is an upper bound of what the API server counts.
 * Guards the API server does not let a webhook's match conditions see (the namespace object) cannot be expressed:
 * then every object of the rule still reaches the webhook.
 */

/** When the webhook is needed for a rule served natively: some guard declines the object. */
export interface Decline {
  /** CEL over `object` (CREATE and UPDATE requests): true when the object is not a map or a guard declines it. */
  readonly cel: string;
  /** The same test on the request's object. */
  declines(object: JsonValue | undefined): boolean;
  /** Upper bound of the CEL's runtime cost, in the API server's units. */
  readonly cost: number;
  /** What the guards check, for messages. */
  readonly what: string;
}

/** A rule's decline, or why it has none that is safe (every object of the rule then reaches the webhook). */
export type DeclineOutcome = { readonly decline: Decline } | { readonly why: string };

/** The API server's runtime cost budget for one webhook's match conditions, per request. */
export const MATCH_CONDITIONS_BUDGET = 2_500_000;
/** What one rule's decline may cost at most: 40% of the budget, for estimates that are upper bounds. */
export const MAX_DECLINE_COST = 1_000_000;

const ORDER: Record<GuardCost, number> = { fixed: 0, elements: 1, text: 2, 'elements-text': 3 };

/** An upper bound of one guard's CEL cost. */
export function guardCost(guard: Guard): number {
  return guardCelCost(guard.cel, guard.cost);
}

const NOT_VISIBLE = /\bnamespaceObject\b|\bvariables\./;

/** The decline of a list of guards (a residual rule's). */
export function declineOfGuards(guards: readonly Guard[]): DeclineOutcome {
  const hidden = guards.find((g) => NOT_VISIBLE.test(g.cel));
  if (hidden)
    return {
      why:
        `its guard "${hidden.what}" reads the namespace object, which the API server does not show a webhook's ` +
        'match conditions',
    };
  const ordered = guards
    .map((g, i) => ({ g, i }))
    .sort((a, b) => ORDER[a.g.cost] - ORDER[b.g.cost] || a.i - b.i)
    .map(({ g }) => g);
  const cost = ordered.reduce((sum, g) => sum + guardCost(g), 8);
  if (cost > MAX_DECLINE_COST)
    return {
      why:
        `its guards may cost the API server up to ${cost} CEL units per request, over the ${MAX_DECLINE_COST} one ` +
        `rule may take of the ${MATCH_CONDITIONS_BUDGET} its match conditions get`,
    };
  const all = ordered.length === 0 ? 'true' : ordered.map((g) => `(${g.cel})`).join(' && ');
  return {
    decline: {
      cel: `type(object) != map || !(${all})`,
      declines: (object) => !isJsonObject(object) || !ordered.every((g) => g.holds(object)),
      cost,
      what: [...new Set(guards.map((g) => g.what))].join('; '),
    },
  };
}

const cache = new WeakMap<CompiledRule, DeclineOutcome | null>();

/**
 * For a residual rule (operator/native/controller.ts hands the webhook one while the rule's policy is in force): when the
 * webhook is needed for its objects. Null for any other rule: the webhook needs all of that rule's objects.
 */
export function declineOf(rule: CompiledRule): DeclineOutcome | null {
  const hit = cache.get(rule);
  if (hit !== undefined) return hit;
  const guards = residualGuards(rule);
  const out = guards ? declineOfGuards(guards.list) : null;
  cache.set(rule, out);
  return out;
}
