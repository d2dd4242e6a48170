import { jsonEqual, JsonObject } from '../util/json';
import { admit, AdmissionInput, AdmissionOutcome, QuarantineCheck, RuleRef } from '../engine/admit';
import { isIgnored, prepare, scopeOf } from '../engine/subject';
import { NO_REFERENCES, ReferenceReader, ReferenceViews } from '../engine/references';
import { applyOperationsShared, MAX_OPERATIONS_PER_REQUEST, resolveOperations } from '../engine/patch';
import { CompiledRule } from '../rule/compile';
import { RuleSnapshot } from '../store/rules';
import { rejectionMessage } from '../engine/rejection';
import { DEFAULT_MAX_BODY_BYTES } from '../util/body-limit';
import { rulesReaching } from './reach';
import { apiVersionOf, ObjectAudit, ObjectRef, RuleResult, ListableResource } from './types';
import { metadataOf } from '../util/meta';

/** What an audit evaluates against: the rules and cluster manifests, and the webhook's request size limit. */
export interface AuditContext {
  snapshot: RuleSnapshot;
  /** Where rules' references are looked up (the operator's caches); omitted: every reference is absent. */
  references?: ReferenceReader;
  /** The webhook's body limit (an UPDATE review carries the object twice); default 8 MiB. */
  maxBodyBytes?: number;
  /** The rules the webhook sets aside now (its quarantine): they are skipped there, so `error` here, not `pass`. */
  quarantined?: QuarantineCheck;
}

// An AdmissionReview's envelope around object and oldObject: uid, kind, resource, userInfo, options...
const REVIEW_OVERHEAD_BYTES = 2048;

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The report's reference to an object (apiVersion and kind from the resource it was listed from). */
export function objectRef(object: JsonObject, resource: ListableResource): ObjectRef {
  const meta = metadataOf(object);
  return {
    apiVersion: apiVersionOf(resource),
    kind: resource.kind,
    namespace: resource.namespaced ? text(meta.namespace) : '',
    name: text(meta.name),
    uid: text(meta.uid),
    resourceVersion: text(meta.resourceVersion),
  };
}

const key = (r: RuleRef) => `${r.namespace}/${r.name}`;
const SYNTHETIC_REFS = 'syntheticRefs';

/**
 * What the webhook would do to an existing object if it were updated unchanged: admit() with the object as both old
 * and new, as the dragnet runs it (syntheticRefs, the ignore label, tiers). undefined when nothing is evaluated: the
 * namespace is ignored, or no rule can reach the object. Pure.
 */
export function auditObject(
  input: JsonObject,
  resource: ListableResource,
  context: AuditContext,
): ObjectAudit | undefined {
  // List items carry no apiVersion/kind; the webhook's object has them.
  const object: JsonObject = { ...input, apiVersion: apiVersionOf(resource), kind: resource.kind };
  const ref = objectRef(object, resource);
  const { snapshot } = context;
  const namespace = scopeOf(ref.namespace || null, object);
  const rules = rulesReaching(snapshot.rulesFor(namespace), resource);
  if (rules.length === 0) return undefined;
  const request: AdmissionInput = { operation: 'UPDATE', object, oldObject: object, namespace };
  if (isIgnored(namespace, object, snapshot)) return undefined;

  const limit = context.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const reviewBytes = 2 * Buffer.byteLength(JSON.stringify(object)) + REVIEW_OVERHEAD_BYTES;
  if (reviewBytes > limit) {
    const message =
      `not evaluated: an UPDATE review of this object is about ${mib(reviewBytes)}, over the webhook's ` +
      `${mib(limit)} body limit (the webhook answers 413 and the API server applies its failurePolicy)`;
    return {
      ref,
      verdict: 'error',
      patch: [],
      message,
      rules: rules.map((r) => resultOf(r, 'error', message)),
    };
  }

  // Messages of rules that read a Secret are withheld: reports are objects in the cluster.
  const outcome = admit(request, snapshot, undefined, {
    quarantined: context.quarantined,
    references: context.references,
  });
  if (outcome.ignored) return undefined;
  const changing = changingRules(request, snapshot, outcome, context.references);
  const rejected = outcome.rejections.length
    ? new Map(outcome.rejections.map((r) => [key(r.rule), r.message]))
    : null;
  // Failed at run time, or skipped by the webhook (quarantined): the rule does not do its work on this object.
  const failed =
    outcome.failures.length || outcome.quarantined.length
      ? new Map([
          ...outcome.quarantined.map((q): [string, string] => [key(q.rule), `the webhook ${q.message}`]),
          ...outcome.failures.map((f): [string, string] => [key(f.rule), f.message]),
        ])
      : null;
  // Warn/DryRun rules that would act: what enforcing them would do, reported as such (the webhook does nothing).
  const unenforced = outcome.unenforced.length
    ? new Map(outcome.unenforced.map((u) => [key(u.rule), u]))
    : null;
  const results = rules.map((rule): RuleResult => {
    const k = rule.key;
    if (rejected?.has(k)) return resultOf(rule, 'reject', rejected.get(k));
    if (failed?.has(k)) return resultOf(rule, 'error', failed.get(k));
    if (changing.has(k)) return resultOf(rule, 'patch');
    const would = unenforced?.get(k);
    if (would) {
      const r = resultOf(rule, would.effect, would.effect === 'reject' ? would.message : undefined);
      r.mode = would.action;
      if (would.effect === 'patch') r.patch = would.patch;
      return r;
    }
    return passOf(rule);
  });
  if (!outcome.allowed)
    return {
      ref,
      verdict: 'reject',
      patch: [],
      message: rejectionMessage(outcome.rejections),
      rules: results,
    };
  if (outcome.patch.length > 0)
    return { ref, verdict: 'patch', patch: outcome.patch, message: '', rules: results };
  const verdict = failed ? 'error' : 'pass';
  return { ref, verdict, patch: [], message: '', rules: results };
}

function resultOf(rule: CompiledRule, verdict: RuleResult['verdict'], message?: string): RuleResult {
  const r: RuleResult = { rule: { namespace: rule.namespace, name: rule.name }, type: rule.type, verdict };
  if (message !== undefined) r.message = message;
  return r;
}

// Most results are passes: one shared, never-changed result per rule instead of one per object and rule.
const passes = new WeakMap<CompiledRule, RuleResult>();
function passOf(rule: CompiledRule): RuleResult {
  let r = passes.get(rule);
  if (!r) {
    r = Object.freeze({
      rule: { namespace: rule.namespace, name: rule.name },
      type: rule.type,
      verdict: 'pass',
    });
    passes.set(rule, r);
  }
  return r;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

const byKeys = new WeakMap<readonly CompiledRule[], Map<string, Map<string, CompiledRule>>>();
/**
 * The rules of a list by key, as they apply to objects of `kind`: a Pod rule and its controller variants share their
 * ModRule's key, and only one of them (its kind pin) reaches the object.
 */
function rulesByKey(rules: readonly CompiledRule[], kind: string): Map<string, CompiledRule> {
  let byKind = byKeys.get(rules);
  if (!byKind) byKeys.set(rules, (byKind = new Map()));
  let map = byKind.get(kind);
  if (!map) {
    map = new Map();
    for (const r of rules) if (!map.has(r.key) || r.podController?.kind === kind) map.set(r.key, r);
    byKind.set(kind, map);
  }
  return map;
}

/** Equal apart from syntheticRefs (a rule may write there; the webhook drops it from the result). */
function sameObject(a: JsonObject, b: JsonObject): boolean {
  if (a === b) return true;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  keys.delete(SYNTHETIC_REFS);
  for (const k of keys) if (!(k in a) || !(k in b) || !jsonEqual(a[k], b[k])) return false;
  return true;
}

/**
 * The Patch rules whose changes end up in the object. A rule can match and apply without changing anything (the
 * object already has its label), so "applied" is not "would patch". The engine applies the matching rules one after
 * the other, each to the object as the rules before it left it (within a tier and across tiers), and drops failed
 * rules whole; so replaying the applied rules in that order on the same prepared object gives the same states,
 * and a rule changes the object exactly when its step does. Only for objects that more than one rule patched.
 * A rule whose only effect is on kubectl's last-applied-configuration (the object has the value already, the
 * annotation does not) changes no step: when no step changes anything, every applied rule is credited.
 */
function changingRules(
  request: AdmissionInput,
  snapshot: RuleSnapshot,
  outcome: AdmissionOutcome,
  references: ReferenceReader | undefined,
): Set<string> {
  if (outcome.patched.length === 0) return new Set();
  // A rejected object gets no patch, but the rules that would have changed it are still worth reporting.
  const changed = outcome.allowed
    ? outcome.patch.length > 0
    : outcome.object !== null && !jsonEqual(outcome.object, request.object as JsonObject);
  if (!changed) return new Set();
  const all = outcome.patched.map(key);
  if (all.length === 1) return new Set(all);
  const byKey = rulesByKey(snapshot.rulesFor(request.namespace), String(request.object?.kind ?? ''));
  const namespace = request.namespace ?? '';
  const budget = { remaining: MAX_OPERATIONS_PER_REQUEST };
  let current = prepare(request.object as JsonObject, request.namespace, snapshot).object;
  const views = new ReferenceViews(references ?? NO_REFERENCES, namespace);
  const out = new Set<string>();
  for (const k of all) {
    const rule = byKey.get(k);
    if (!rule) continue;
    let next: JsonObject;
    try {
      next = applyOperationsShared(
        current,
        resolveOperations(rule, views.objectFor(rule, current), namespace, budget),
      ) as JsonObject;
    } catch {
      continue; // cannot happen for a rule that applied in the real run; credit it below if nothing else
    }
    if (!sameObject(next, current)) out.add(k);
    current = next;
  }
  return out.size > 0 ? out : new Set(all);
}
