import { JsonObject } from '../util/json';
import type { CompiledRule } from '../rule/compile';
import { patchField, ruleLabel } from '../rule/pod-controllers';
import { and, celString, not, or, ternary } from './cel';
import type { CompiledParts, NativeReason } from './compile-parts';
import { Guard, GuardCost, Guards } from './guard';
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

/**
 * One CEL choosing, by the object's kind, among the members' (the last, the Pod rule's, for every other object):
 * flat, one term per member (`empty` for a list or a string: the terms are added up, one at most is not empty; else a
 * disjunction). The API server checks nested choices of long expressions far more slowly.
 */
function dispatch(tests: readonly string[], cels: readonly string[], empty?: string): string {
  if (cels.every((c) => c === cels[0])) return cels[0];
  const when = [...tests, not(or(tests))];
  if (empty === undefined) return or(cels.map((c, i) => and([when[i], c])));
  const terms = cels.flatMap((c, i) => (c === empty ? [] : [`(${ternary(when[i], c, empty)})`]));
  return terms.length === 0 ? empty : terms.join(' + ');
}

/** The members' parts merged into one policy's: members[0] is the Pod rule, the others its variants in order. */
export function mergeMembers(rule: CompiledRule, members: readonly CompiledParts[]): CompiledParts {
  const all = [rule, ...(rule.variants ?? [])];
  const reasons: NativeReason[] = [];
  // The rule's own match items: the Pod rule's last one (a Patch rule's) and a variant's last ones are generated.
  const own = rule.match.length - (rule.type === 'Patch' ? 1 : 0);
  // A variant's reason at a field where the Pod rule has one already is that reason again, moved: left out.
  const podFields = new Set<string>();
  members.forEach((m, i) => {
    if (m.fits) return;
    const label = i === 0 ? '' : `${ruleLabel(all[i])}: `;
    for (const r of m.reasons) {
      const field = memberField(all[i], r.field, own);
      if (i === 0) podFields.add(field);
      else if (podFields.has(field)) continue;
      reasons.push({ field, message: `${label}${r.message}` });
    }
  });
  if (reasons.length > 0) return { fits: false, reasons };
  const fit = members as ReadonlyArray<Extract<CompiledParts, { fits: true }>>;
  // Variants first, each under its test; the Pod rule last, for everything else.
  const order = [...fit.slice(1), fit[0]];
  const variants = all.slice(1).map((v) => v.podController!);
  const tests = variants.map(isOf);
  const pick = (cel: (m: (typeof fit)[number]) => string, empty?: string) =>
    dispatch(tests, order.map(cel), empty);
  const width = Math.max(...fit.map((m) => m.parts.match.length));
  const match = Array.from({ length: width }, (_, i) => pick((m) => m.parts.match[i] ?? 'true'));
  const patch = rule.type === 'Patch' ? pick((m) => m.parts.patch ?? '[]', '[]') : undefined;
  const message = rule.type === 'Reject' ? pick((m) => m.parts.message ?? '""', '""') : undefined;
  const guards = new Guards();
  order.forEach((m, i) => {
    const at = variants[i];
    // A member's guards bind only the objects it decides (the Pod rule's, those no variant takes): one guard per
    // member, its test written once (the API server's cost estimate of a long guard takes seconds).
    const exempt = at ? `!(${tests[i]})` : or(tests);
    const applies = at
      ? (o: JsonObject) => isObjectOf(at, o)
      : (o: JsonObject) => !variants.some((v) => isObjectOf(v, o));
    if (m.guards.list.length > 0) guards.add(memberGuard(m.guards, exempt, applies, at?.kind));
  });
  if (width + guards.list.length + 1 > 64)
    return {
      fits: false,
      reasons: [
        {
          field: 'spec.match',
          message: `${width} criteria and ${guards.list.length} members' guards: more than a policy's 64 conditions`,
        },
      ],
    };
  return {
    fits: true,
    parts: {
      scope: fit[0].parts.scope,
      guard: guards.cel(),
      guards: guards.list.map((g) => g.cel),
      match,
      patch,
      message,
    },
    guards,
    reads: fit.flatMap((m): Read[] => [...m.reads]),
    effects: fit.flatMap((m): OperationEffect[] => [...m.effects]),
  };
}

/**
 * A member's reason field as the ModRule has it: a variant's patch starts with its marker; the match items after the
 * rule's own (`own`) are generated (the controller's apiVersion, the marker and what a variant skips).
 */
function memberField(member: CompiledRule, field: string, own: number): string {
  const patch = /^spec\.patch\[(\d+)\](.*)$/.exec(field);
  if (patch) return patchField(member, Number(patch[1])) + patch[2];
  const match = /^spec\.match\[(\d+)\](.*)$/.exec(field);
  if (match && Number(match[1]) >= own) return 'spec.podControllers';
  return field;
}

const COSTS: readonly GuardCost[] = ['fixed', 'text', 'elements', 'elements-text'];

/** A member's guards as one, holding for the objects it does not decide. */
function memberGuard(
  member: Guards,
  exempt: string,
  applies: (o: JsonObject) => boolean,
  kind: string | undefined,
): Guard {
  const list = member.list;
  // The costliest class of the member's guards (elements-text covers both kinds of growth).
  const rank = Math.max(...list.map((g) => COSTS.indexOf(g.cost)));
  const cost = rank === 2 && list.some((g) => g.cost === 'text') ? 'elements-text' : COSTS[rank];
  return {
    cel: or([exempt, member.cel()]),
    holds: (o) => !applies(o) || member.holds(o),
    what: `${kind ? `${kind}: ` : ''}${list.map((g) => g.what).join('; ')}`,
    cost,
  };
}
