import { isJsonObject, jsonEqual, JsonObject } from '../util/json';
import { admit, AdmissionInput, AdmissionOutcome, RuleRef, scopeOf } from '../engine/admit';
import { CompiledRule } from '../modrule/compile';
import { RuleSnapshot } from '../store/rules';
import { rejectionMessage } from '../webhook/dragnet';
import { DEFAULT_MAX_BODY_BYTES } from '../webhook/http';
import { rulesReaching } from './reach';
import { apiVersionOf, ObjectAudit, ObjectRef, RuleResult, ServedResource } from './types';

/** What an audit evaluates against: the rules and cluster manifests, and the webhook's request size limit. */
export interface AuditContext {
  snapshot: RuleSnapshot;
  /** The webhook's body limit (an UPDATE review carries the object twice); default 8 MiB. */
  maxBodyBytes?: number;
}

// An AdmissionReview's envelope around object and oldObject: uid, kind, resource, userInfo, options...
const REVIEW_OVERHEAD_BYTES = 2048;

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The report's reference to an object (apiVersion and kind from the resource it was listed from). */
export function objectRef(object: JsonObject, resource: ServedResource): ObjectRef {
  const meta = isJsonObject(object.metadata) ? object.metadata : {};
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

/**
 * What the webhook would do to an existing object if it were updated unchanged: admit() with the object as both old
 * and new, as the dragnet runs it (syntheticRefs, the ignore label, tiers). undefined when nothing is evaluated: the
 * namespace is ignored, or no rule can reach the object. Pure.
 */
export function auditObject(
  input: JsonObject,
  resource: ServedResource,
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
      rules: rules.map((r) => ({ rule: r, type: r.type, verdict: 'error', message })),
    };
  }

  const outcome = admit(request, snapshot);
  if (outcome.ignored) return undefined;
  const changing = changingRules(request, snapshot, outcome);
  const rejected = new Map(outcome.rejections.map((r) => [key(r.rule), r.message]));
  const failed = new Map(outcome.failures.map((f) => [key(f.rule), f.message]));
  const results: RuleResult[] = rules.map((rule): RuleResult => {
    const k = key(rule);
    const base = { rule: { namespace: rule.namespace, name: rule.name }, type: rule.type };
    if (rejected.has(k)) return { ...base, verdict: 'reject', message: rejected.get(k) };
    if (failed.has(k)) return { ...base, verdict: 'error', message: failed.get(k) };
    if (changing.has(k)) return { ...base, verdict: 'patch' };
    return { ...base, verdict: 'pass' };
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
  const verdict = outcome.failures.length > 0 ? 'error' : 'pass';
  return { ref, verdict, patch: [], message: '', rules: results };
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * The Patch rules whose changes end up in the patch. A rule can match and apply without changing anything (the
 * object already has its label), so "applied" is not "would patch". Each rule's effect is found by running the
 * rules in order up to and including it (a prefix of the evaluation order is evaluated exactly as in the full run:
 * later rules never influence earlier ones) and comparing with the prefix before it. Only for objects that would
 * be changed by more than one rule.
 */
function changingRules(
  request: AdmissionInput,
  snapshot: RuleSnapshot,
  outcome: AdmissionOutcome,
): Set<string> {
  if (outcome.patched.length === 0) return new Set();
  // A rejected object gets no patch, but the rules that would have changed it are still worth reporting.
  const changed = outcome.allowed
    ? outcome.patch.length > 0
    : outcome.object !== null && !jsonEqual(outcome.object, request.object as JsonObject);
  if (!changed) return new Set();
  if (outcome.patched.length === 1) return new Set([key(outcome.patched[0])]);
  const all = snapshot.rulesFor(request.namespace).filter((r) => r.type === 'Patch');
  const wanted = new Set(outcome.patched.map(key));
  const out = new Set<string>();
  let before = request.object as JsonObject;
  for (let i = 0; i < all.length; i++) {
    if (!wanted.has(all[i].key)) continue;
    const after = admit(request, withRules(snapshot, all.slice(0, i + 1))).object ?? before;
    if (!jsonEqual(after, before)) out.add(all[i].key);
    before = after;
  }
  return out;
}

/** The snapshot with only these rules in scope (for every namespace); manifests unchanged. */
function withRules(snapshot: RuleSnapshot, rules: readonly CompiledRule[]): RuleSnapshot {
  return {
    clusterNamespace: snapshot.clusterNamespace,
    rulesFor: () => rules,
    namespace: (name) => snapshot.namespace(name),
    node: (name) => snapshot.node(name),
    ruleCount: rules.length,
    namespaceCount: snapshot.namespaceCount,
    nodeCount: snapshot.nodeCount,
  };
}
