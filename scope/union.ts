import type { LabelSelector, LabelSelectorRequirement } from '../rule/labelselector';
import { CONDITION_PREFIX, NAME_LABEL, SELECTOR_MARK } from './compute';
import { scopeHash } from './entry';
import { MatchCondition, Scope, WebhookRule } from './types';

/*
 * The union of two dragnet registrations: one that sends every request either sends. The operator writes it when a
 * ModRule is admitted whose objects the live registration does not send yet: it must widen the net without taking
 * anything away (another rule, admitted elsewhere a moment ago, may rely on the live one).
 */

/**
 * How precise the union may be: `full` keeps the namespace names of both, `resources` drops the operator's
 * namespace-name requirement too. Each level sends at least what the one before does; the writer steps down when the
 * API server refuses one.
 */
export type UnionLevel = 'full' | 'resources';
export const UNION_LEVELS: readonly UnionLevel[] = ['full', 'resources'];

function listCovers(have: readonly string[], want: readonly string[]): boolean {
  return have.includes('*') || want.every((w) => have.includes(w));
}

/** Whether `have` matches every request `want` matches for `resource`. */
function ruleCoversResource(have: WebhookRule, want: WebhookRule, resource: string): boolean {
  return (
    listCovers(have.operations, want.operations) &&
    listCovers(have.apiGroups, want.apiGroups) &&
    listCovers(have.apiVersions, want.apiVersions) &&
    (have.resources.includes('*') || have.resources.includes(resource)) &&
    (have.scope === '*' || have.scope === want.scope)
  );
}

/** Whether the rules `have` match every request the rule `want` matches (resource by resource). */
function rulesCover(have: readonly WebhookRule[], want: WebhookRule): boolean {
  return want.resources.every((res) => have.some((h) => ruleCoversResource(h, want, res)));
}

function isOurs(e: LabelSelectorRequirement): boolean {
  return e.key === NAME_LABEL && e.operator === 'In' && (e.values ?? []).includes(SELECTOR_MARK);
}

/** The namespaceSelector of the union: the operator's name requirement holds the names of both, or is dropped. */
function unionSelector(live: LabelSelector, want: LabelSelector, keepNames: boolean): LabelSelector {
  const liveOurs = (live.matchExpressions ?? []).find(isOurs);
  if (!liveOurs) return live;
  const wantOurs = (want.matchExpressions ?? []).find(isOurs);
  const others = (live.matchExpressions ?? []).filter((e) => !isOurs(e));
  const without = (): LabelSelector => {
    const { matchExpressions: _drop, ...rest } = live;
    return others.length > 0 ? { ...rest, matchExpressions: others } : rest;
  };
  if (!wantOurs || !keepNames) return without();
  const have = new Set(liveOurs.values);
  const added = (wantOurs.values ?? []).filter((v) => !have.has(v));
  if (added.length === 0) return live;
  const names = [...(liveOurs.values ?? []), ...added].filter((v) => v !== SELECTOR_MARK).sort();
  const merged: LabelSelectorRequirement = { ...liveOurs, values: [...names, SELECTOR_MARK] };
  return {
    ...live,
    matchExpressions: (live.matchExpressions ?? []).map((e) => (e === liveOurs ? merged : e)),
  };
}

const ours = (c: MatchCondition) => c.name.startsWith(CONDITION_PREFIX);

/**
 * The union's matchConditions: the configured ones (the same in both), and the operator's own only when the wanted
 * registration has each of them too (it is then at least as strict); otherwise none of the operator's. Dropping them
 * sends a little more for a moment (the next computation from the stored rules narrows again) and keeps the union
 * idempotent: a union with what it already covers is itself.
 */
function unionConditions(live: readonly MatchCondition[], want: readonly MatchCondition[]): MatchCondition[] {
  const liveOurs = live.filter(ours);
  if (liveOurs.length === 0) return [...live];
  const wanted = new Set(want.filter(ours).map((c) => c.expression));
  if (wanted.size > 0 && liveOurs.every((c) => wanted.has(c.expression))) return [...live];
  return live.filter((c) => !ours(c));
}

/**
 * A registration that sends every request `live` or `want` sends (both computed against the same configured net);
 * `live` itself, unchanged, when it already does (by the structure of the operator's registrations: a sufficient
 * test, so an equal result means "nothing to write").
 */
export function unionScopes(live: Scope, want: Scope, level: UnionLevel = 'full'): Scope {
  // A registration with no rules sends nothing: the union is the other one, as precise as it is.
  if (want.rules.length === 0) return live;
  if (live.rules.length === 0 && level === 'full') return want;
  const added = want.rules.filter((r) => !rulesCover(live.rules, r));
  return {
    rules: added.length === 0 ? live.rules : [...live.rules, ...added],
    namespaceSelector: unionSelector(live.namespaceSelector, want.namespaceSelector, level !== 'resources'),
    matchConditions: unionConditions(live.matchConditions, want.matchConditions),
  };
}

/** Whether `live` sends every request `want` sends, as far as the union can tell (no write needed). */
export function scopeIncludes(live: Scope, want: Scope): boolean {
  return scopeHash(unionScopes(live, want)) === scopeHash(live);
}
