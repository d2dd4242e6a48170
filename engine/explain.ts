// Why a rule did or did not match: an offline companion of admit() for `modrule apply --explain` and
// `modrule test`. It is never on the request path. Verdicts come from the engine's own primitives (itemMatches,
// ruleMatches, resolveOperations, applyOperations, snapshot.rulesFor) so the explanation cannot disagree with what
// admit() decides; the rest (select results, compared values) is detail for the reader.
import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../util/json';
import { formatGoValue } from '../jsonpath';
import { CompiledMatchItem, CompiledRule } from '../rule/compile';
import { AdmissionOperation, IGNORE_LABEL } from '../rule/types';
import { ruleLabel } from '../rule/pod-controllers';
import { formatPointer } from '../patch/pointer';
import { itemMatches, ruleMatches, valueMatches } from './match';
import { applyOperations, Budget, MAX_OPERATIONS_PER_REQUEST, resolveOperations } from './patch';
import { AdmissionInput } from './admit';
import { isIgnored, prepare, scopeOf } from './subject';
import { compareRules, RuleSnapshot } from '../store/rules';
import { NO_REFERENCES, ReferenceReader, ReferenceViews } from './references';
import { messageOf } from '../util/errors';
import { templateData } from './pod-view';

/** How many select results an explanation lists per match item. */
export const MAX_LISTED_RESULTS = 5;

/** One value a select yielded. */
export interface SelectHit {
  value: JsonValue;
  /** JSON pointer; null for computed values (comparisons, functions). */
  path: string | null;
}

/** One `match` item and how it came out. */
export interface MatchItemExplanation {
  index: number;
  select: string;
  /** The first MAX_LISTED_RESULTS results. */
  results: SelectHit[];
  resultCount: number;
  /** The select failed at run time (counts as no result). */
  error?: string;
  /** What the values were compared with: matchValue, matchValues, matchRegex, or any value. */
  compare: { matchValue: string } | { matchValues: string[] } | { matchRegex: string } | { any: true };
  matchFor: 'Any' | 'All';
  negate: boolean;
  matched: boolean;
  /** One sentence on why. */
  reason: string;
}

/** One patch operation as resolved against the object. */
export interface OperationExplanation {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: JsonValue;
}

/** One rule's part in the request. */
export interface RuleExplanation {
  rule: string;
  type: 'Patch' | 'Reject';
  tier: number;
  /** out-of-scope: not considered (reason says why); skipped: in scope but the request was ignored. */
  status: 'matched' | 'not-matched' | 'out-of-scope';
  reason?: string;
  /** Every item, in order (the engine stops at the first failing one; the rest are shown for context). */
  items: MatchItemExplanation[];
  /** Patch rules that matched: the operations they resolved to. */
  operations?: OperationExplanation[];
  /** Reject rules that matched: the rendered message. */
  rejectMessage?: string;
  /** The rule failed at run time; its changes were dropped. */
  error?: string;
  /**
   * spec.enforcementAction Warn or DryRun: its operations or message are what enforcing it would do; the object is
   * admitted as it is, and later rules do not see its patch.
   */
  mode?: 'Warn' | 'DryRun';
  /** Rules that read other objects: each syntheticRefs entry it reads, and whether it was found. */
  references?: ReferenceExplanation[];
}

/** One reference a rule reads, as the rule saw it. */
export interface ReferenceExplanation {
  /** syntheticRefs.<name> */
  name: string;
  /** What it names: `ConfigMap platform/registry`, `ConfigMap platform with labels ...`, `owner (2 levels)`. */
  target: string;
  /** Found (an object), how many (a selector), or absent. */
  found: boolean | number;
}

/** Every rule's part in one admission request. */
export interface AdmissionExplanation {
  operation: AdmissionOperation;
  namespace: string | null;
  /** Set when the namespace (or Namespace object) carries the ignore label: nothing was evaluated. */
  ignored?: string;
  rules: RuleExplanation[];
}

/**
 * Explains admit(input, snapshot) rule by rule. `allRules` are every compiled rule known (so rules out of scope can
 * say why); rules the snapshot puts in scope are taken from snapshot.rulesFor, as admit() does.
 */
export function explainAdmission(
  input: AdmissionInput,
  snapshot: RuleSnapshot,
  allRules: readonly CompiledRule[],
  references: ReferenceReader = NO_REFERENCES,
): AdmissionExplanation {
  const operation = input.operation;
  const subject = operation === 'DELETE' ? input.oldObject : input.object;
  const namespace = subject ? scopeOf(input.namespace, subject) : input.namespace || null;
  const explanation: AdmissionExplanation = { operation, namespace, rules: [] };
  const scoped = snapshot.rulesFor(namespace);
  const inScope = new Set(scoped);
  // Rules are known by label (a Pod rule's variants by their controller kind too): `allRules` may be other compiled instances of the snapshot's rules (last one wins).
  const known = new Map<string, CompiledRule>();
  for (const r of allRules) known.set(ruleLabel(r), r);
  for (const r of scoped) known.set(ruleLabel(r), r);
  const ordered = [...known.values()].sort(compareRules);
  const blank = (rule: CompiledRule, reason: string): RuleExplanation => ({
    rule: ruleLabel(rule),
    type: rule.type,
    tier: rule.tier,
    status: 'out-of-scope',
    reason,
    items: [],
  });

  if (!subject) {
    explanation.rules = ordered.map((r) => blank(r, 'no object to match'));
    return explanation;
  }
  const ignoredBy = ignoreReason(namespace, subject, snapshot);
  if (ignoredBy) {
    explanation.ignored = ignoredBy;
    explanation.rules = ordered.map((r) => blank(r, ignoredBy));
    return explanation;
  }

  const byRule = new Map<CompiledRule, RuleExplanation>();
  for (const rule of ordered) {
    if (!inScope.has(rule)) byRule.set(rule, blank(rule, scopeReason(rule, namespace, snapshot)));
    else if (!rule.operations.has(operation))
      byRule.set(
        rule,
        blank(rule, `admissionOperations [${[...rule.operations].join(', ')}] does not include ${operation}`),
      );
  }
  const rules = [...inScope].filter((r) => r.operations.has(operation));
  const namespaceText = namespace ?? '';
  let current = prepare(subject, namespace, snapshot).object;
  const views = new ReferenceViews(references, namespaceText);

  // Patch rules tier by tier, as admit(): matched against the tier's input, resolved against the running object.
  const budget: Budget = { remaining: MAX_OPERATIONS_PER_REQUEST };
  const patchRules = rules.filter((r) => r.type === 'Patch');
  for (let i = 0; i < patchRules.length;) {
    const tier = patchRules[i].tier;
    const tierInput = current;
    for (; i < patchRules.length && patchRules[i].tier === tier; i++) {
      const rule = patchRules[i];
      const e = explainMatch(rule, views.objectFor(rule, tierInput));
      byRule.set(rule, e);
      if (e.status !== 'matched') continue;
      try {
        const ops = resolveOperations(rule, views.objectFor(rule, current), namespaceText, budget);
        e.operations = ops.map((o) => ({
          op: o.op,
          path: formatPointer(o.tokens),
          ...(o.value === undefined ? {} : { value: o.value }),
        }));
        const next = applyOperations(cloneJson(current), ops);
        if (!isJsonObject(next)) throw new Error('the patch replaced the object with a non-object');
        // Warn/DryRun: recorded, not applied (as admit() does).
        if (rule.enforcement === 'Enforce') current = next;
      } catch (err) {
        e.error = messageOf(err);
      }
    }
  }
  for (const rule of rules) {
    if (rule.type !== 'Reject') continue;
    const view = views.objectFor(rule, current);
    const e = explainMatch(rule, view);
    byRule.set(rule, e);
    if (e.status !== 'matched' || !rule.rejectMessage) continue;
    try {
      e.rejectMessage = rule.rejectMessage.render(templateData(rule, view, namespaceText));
    } catch (err) {
      e.error = `rejectMessage: ${messageOf(err)}`;
    }
  }
  explanation.rules = ordered.map((r) => byRule.get(r) as RuleExplanation);
  return explanation;
}

function explainMatch(rule: CompiledRule, root: JsonValue): RuleExplanation {
  const items = rule.match.map((item, i) => explainItem(item, i, root));
  return {
    rule: ruleLabel(rule),
    type: rule.type,
    tier: rule.tier,
    status: ruleMatches(rule, root) ? 'matched' : 'not-matched',
    items,
    ...(rule.references ? { references: explainReferences(rule, root) } : {}),
    ...(rule.enforcement === 'Enforce' ? {} : { mode: rule.enforcement }),
  };
}

/** What each reference of a rule was in its view (root: the object with the rule's references). */
function explainReferences(rule: CompiledRule, root: JsonValue): ReferenceExplanation[] {
  const refs = rule.references;
  const seen = isJsonObject(root) && isJsonObject(root.syntheticRefs) ? root.syntheticRefs : {};
  const out: ReferenceExplanation[] = [];
  if (refs && refs.owner.levels > 0) {
    let levels = 0;
    let o: JsonValue | undefined = seen.owner;
    while (isJsonObject(o)) {
      levels++;
      o = isJsonObject(o.syntheticRefs) ? o.syntheticRefs.owner : undefined;
    }
    out.push({
      name: 'owner',
      target: `the controlling owner, ${refs.owner.levels} level(s)`,
      found: levels,
    });
  }
  for (const d of refs?.named ?? []) {
    const where = d.namespace ? `${d.namespace}/` : '';
    const value = seen[d.name];
    out.push(
      d.objectName !== undefined
        ? { name: d.name, target: `${d.kind} ${where}${d.objectName}`, found: value !== undefined }
        : {
            name: d.name,
            target: `${d.kind} ${d.namespace || '(cluster)'} with labels ${d.selectorKey ?? ''}`,
            found: Array.isArray(value) ? value.length : 0,
          },
    );
  }
  return out;
}

/** Explains one match item; `matched` is itemMatches() itself. */
export function explainItem(item: CompiledMatchItem, index: number, root: JsonValue): MatchItemExplanation {
  const matched = itemMatches(item, root);
  const base = {
    index,
    select: item.select.source,
    compare: compareOf(item),
    matchFor: item.matchFor,
    negate: item.negate,
    matched,
  };
  let results;
  try {
    results = item.select.select(root);
  } catch (err) {
    const error = messageOf(err);
    return {
      ...base,
      results: [],
      resultCount: 0,
      error,
      reason: `the select failed (${error})${negated(item)}`,
    };
  }
  const hits = results.slice(0, MAX_LISTED_RESULTS).map((r) => ({ value: r.value, path: r.path }));
  const done = (reason: string): MatchItemExplanation => ({
    ...base,
    results: hits,
    resultCount: results.length,
    reason,
  });
  if (results.length === 0) return done(`the select yields nothing${negated(item)}`);
  if (results.length === 1 && results[0].indices.length === 0) {
    const v = results[0].value;
    if (typeof v === 'boolean') return done(`the select is ${String(v)}${negated(item)}`);
    if (v === null) return done(`the select yields null${negated(item)}`);
  }
  const values =
    results.length === 1 && results[0].indices.length === 0 && Array.isArray(results[0].value)
      ? results[0].value
      : results.map((r) => r.value);
  if (values.length === 0) return done(`the select yields an empty list${negated(item)}`);
  const texts = values.map((v) => formatGoValue(v));
  const hitsCompare = texts.filter((t) => valueMatches(item, t)).length;
  const need = item.matchFor === 'All' ? 'matchFor All needs every one' : 'matchFor Any needs one';
  const of = `${hitsCompare} of ${values.length} value${values.length === 1 ? '' : 's'} matched`;
  return done(`${of}, ${need}${negated(item)}`);
}

function negated(item: CompiledMatchItem): string {
  return item.negate ? '; negate flips it' : '';
}

function compareOf(item: CompiledMatchItem): MatchItemExplanation['compare'] {
  if (item.matchValue !== undefined) return { matchValue: item.matchValue };
  if (item.matchValues !== undefined) return { matchValues: [...item.matchValues] };
  if (item.matchRegex !== undefined) return { matchRegex: item.matchRegex.source };
  return { any: true };
}

/** "matchValue \"x\"", "matchRegex ..." or "any value". */
export function describeCompare(c: MatchItemExplanation['compare']): string {
  if ('matchValue' in c) return `matchValue ${JSON.stringify(c.matchValue)}`;
  if ('matchValues' in c) return `matchValues ${JSON.stringify(c.matchValues)}`;
  if ('matchRegex' in c) return `matchRegex ${JSON.stringify(c.matchRegex)}`;
  return 'any value';
}

// Why an ignored object is ignored; the verdict is admit()'s own isIgnored().
function ignoreReason(
  namespace: string | null,
  subject: JsonObject,
  snapshot: RuleSnapshot,
): string | undefined {
  if (!isIgnored(namespace, subject, snapshot)) return undefined;
  return namespace === null
    ? `the Namespace is labelled ${IGNORE_LABEL}=true`
    : `namespace ${namespace} is labelled ${IGNORE_LABEL}=true`;
}

function scopeReason(rule: CompiledRule, namespace: string | null, snapshot: RuleSnapshot): string {
  if (rule.namespace !== snapshot.clusterNamespace)
    return `the rule is in namespace ${rule.namespace}, the object in ${namespace === null ? 'none (cluster-scoped)' : namespace}`;
  const regex = rule.targetNamespaceRegex;
  if (namespace === null) {
    return regex
      ? `targetNamespaceRegex ${JSON.stringify(regex.source)} does not match "" (cluster-scoped objects)`
      : 'not selected for cluster-scoped objects';
  }
  if (regex && !regex.test(namespace))
    return `targetNamespaceRegex ${JSON.stringify(regex.source)} does not match namespace ${namespace}`;
  if (rule.targetNamespaceSelector !== undefined)
    return `targetNamespaceSelector does not select namespace ${namespace}`;
  if (!regex)
    return 'a cluster-wide rule without targetNamespaceRegex applies to cluster-scoped objects only';
  return `not selected for namespace ${namespace}`;
}
