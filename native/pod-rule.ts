import { JsonObject } from '../util/json';
import type { CompiledRule } from '../rule/compile';
import { ruleLabel } from '../rule/pod-controllers';
import { and, celString, or, ternary } from './cel';
import type { CompiledParts, NativeReason } from './compile-parts';
import { Guard, Guards } from './guard';
import type { OperationEffect } from './patch';
import type { Read } from './select-context';

/*
 * A Pod rule with controller variants (spec.podControllers) is one policy: every condition, the guards, the patch
 * and the message choose by the object's apiVersion and kind which member's CEL applies (a variant's for its
 * controller, the Pod rule's for anything else, which its own Pod criterion then decides). One policy per ModRule
 * keeps its name, binding, hand-over and residual rule as for any other rule; the rule fits only if every member does.
 */

/** CEL: the object is of this controller's apiVersion and kind. */
function isOf(at: { apiVersion: string; kind: string }): string {
  return and([
    `object[?"apiVersion"].orValue("") == ${celString(at.apiVersion)}`,
    `object[?"kind"].orValue("") == ${celString(at.kind)}`,
  ]);
}

/** The same test on the object the engine sees. */
function isObjectOf(at: { apiVersion: string; kind: string }, o: JsonObject): boolean {
  return o.apiVersion === at.apiVersion && o.kind === at.kind;
}

/** One CEL choosing, by the object's kind, among the members' (the last, the Pod rule's, for every other object). */
function dispatch(tests: readonly string[], cels: readonly string[]): string {
  let out = cels[cels.length - 1];
  for (let i = tests.length - 1; i >= 0; i--) out = cels[i] === out ? out : ternary(tests[i], cels[i], out);
  return out;
}

/** The members' parts merged into one policy's: members[0] is the Pod rule, the others its variants in order. */
export function mergeMembers(rule: CompiledRule, members: readonly CompiledParts[]): CompiledParts {
  const all = [rule, ...(rule.variants ?? [])];
  const reasons: NativeReason[] = [];
  members.forEach((m, i) => {
    if (m.fits) return;
    const label = i === 0 ? '' : `${ruleLabel(all[i])}: `;
    for (const r of m.reasons)
      reasons.push(i === 0 ? r : { field: r.field, message: `${label}${r.message}` });
  });
  if (reasons.length > 0) return { fits: false, reasons };
  const fit = members as ReadonlyArray<Extract<CompiledParts, { fits: true }>>;
  // Variants first, each under its test; the Pod rule last, for everything else.
  const order = [...fit.slice(1), fit[0]];
  const variants = all.slice(1).map((v) => v.podController!);
  const tests = variants.map(isOf);
  const pick = (cel: (m: (typeof fit)[number]) => string) => dispatch(tests, order.map(cel));
  const width = Math.max(...fit.map((m) => m.parts.match.length));
  const match = Array.from({ length: width }, (_, i) => pick((m) => m.parts.match[i] ?? 'true'));
  const patch = rule.type === 'Patch' ? pick((m) => m.parts.patch ?? '[]') : undefined;
  const message = rule.type === 'Reject' ? pick((m) => m.parts.message ?? '""') : undefined;
  const guards = new Guards();
  order.forEach((m, i) => {
    const at = variants[i];
    // A member's guard binds only the objects it decides; the Pod rule's, those no variant takes.
    const cel = at ? `!(${tests[i]})` : or(tests);
    const applies = at
      ? (o: JsonObject) => isObjectOf(at, o)
      : (o: JsonObject) => !variants.some((v) => isObjectOf(v, o));
    for (const g of m.guards.list) guards.add(scoped(g, cel, applies, at?.kind));
  });
  return {
    fits: true,
    parts: { scope: fit[0].parts.scope, guard: guards.cel(), match, patch, message },
    guards,
    reads: fit.flatMap((m): Read[] => [...m.reads]),
    effects: fit.flatMap((m): OperationEffect[] => [...m.effects]),
  };
}

/** A member's guard, holding for the objects it does not decide. */
function scoped(
  g: Guard,
  exempt: string,
  applies: (o: JsonObject) => boolean,
  kind: string | undefined,
): Guard {
  return {
    cel: exempt === 'false' ? g.cel : `${exempt} || (${g.cel})`,
    holds: (o) => !applies(o) || g.holds(o),
    what: kind ? `${kind}: ${g.what}` : g.what,
    cost: g.cost,
  };
}
