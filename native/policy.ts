import { JsonObject } from '../util/json';
import type { CompiledRule } from '../rule/compile';
import { DragnetMatch } from './dragnet';
import { metadataOf } from '../util/meta';

/** The API version of MutatingAdmissionPolicy and ValidatingAdmissionPolicy (GA; what Kubernetes 1.37 serves). */
export const POLICY_API_VERSION = 'admissionregistration.k8s.io/v1';
/**
 * Annotation on a ModRule asking for the native path: "true" (or, with the operator's --native-policies=all, anything
 * but "false"). An annotation, not a spec field: the ModRule spec stays KubeMod's.
 */
export const SERVE_ANNOTATION = 'native.modrule.io/serve';
/** Annotation on a generated policy naming the ModRule it was compiled from (namespace/name). */
export const RULE_ANNOTATION = 'native.modrule.io/rule';

/** `modrule.<namespace>.<name>`: namespaces have no dots, so two rules never share a name. */
export function policyName(rule: { namespace: string; name: string }): string {
  return `modrule.${rule.namespace}.${rule.name}`;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `name` cannot name a policy (a DNS-1123 subdomain of at most 253 characters); undefined when it can. */
export function policyNameProblem(name: string): string | undefined {
  if (name.length > 253) return `policy name ${name} is longer than 253 characters`;
  if (!DNS_SUBDOMAIN.test(name))
    return (
      `policy name ${JSON.stringify(name)} is not a DNS-1123 subdomain ` +
      "(lower-case letters, digits, '-' and '.'), as policy names must be"
    );
  return undefined;
}

/** What the compiled CEL of one rule amounts to. */
export interface PolicyParts {
  readonly scope: string;
  readonly guard: string;
  /**
   * The guards as several conditions instead (a Pod rule with controller variants: one per member; the API server
   * takes far longer to check one long expression than its parts).
   */
  readonly guards?: readonly string[];
  readonly match: readonly string[];
  /** Patch: the JSONPatch expression. */
  readonly patch?: string;
  /** Reject: the message expression. */
  readonly message?: string;
}

function metadata(rule: CompiledRule): JsonObject {
  return {
    name: policyName(rule),
    labels: { 'app.kubernetes.io/part-of': 'modrule' },
    annotations: { [RULE_ANNOTATION]: `${rule.namespace}/${rule.name}` },
  };
}

function constraints(scope: DragnetMatch, operations: readonly string[]): JsonObject {
  return {
    resourceRules: scope.rules.map((r) => ({ ...r, operations: [...operations] })),
    matchPolicy: 'Equivalent',
    namespaceSelector: scope.namespaceSelector,
    ...(scope.objectSelector ? { objectSelector: scope.objectSelector } : {}),
  };
}

/**
 * The conditions split by where the API server can evaluate them: matchConditions see no namespaceObject (it is
 * null there) and no variables, so conditions that read either are evaluated with the mutation or validation.
 */
function split(parts: PolicyParts): { early: JsonObject[]; late: string[] } {
  const early: JsonObject[] = [];
  const late: string[] = [];
  const place = (name: string, cel: string) => {
    if (cel === 'true') return;
    if (/namespaceObject|variables\./.test(cel)) late.push(cel);
    else early.push({ name, expression: cel });
  };
  place('scope', parts.scope);
  if (parts.guards) parts.guards.forEach((g, i) => place(`native-guards-${i}`, g));
  else place('native-guards', parts.guard);
  parts.match.forEach((m, i) => place(`match-${i}`, m));
  return { early, late };
}

function conjunction(conditions: readonly string[]): string {
  return conditions.length === 0 ? 'true' : conditions.map((c) => `(${c})`).join(' && ');
}

/** A Patch rule's MutatingAdmissionPolicy. */
export function mutatingPolicy(rule: CompiledRule, parts: PolicyParts, scope: DragnetMatch): JsonObject {
  const operations = ['CREATE', 'UPDATE'].filter((o) => rule.operations.has(o as 'CREATE'));
  const { early, late } = split(parts);
  const body = parts.patch ?? '[]';
  const patch = late.length === 0 ? body : `${conjunction(late)} ? (${body}) : []`;
  return {
    apiVersion: POLICY_API_VERSION,
    kind: 'MutatingAdmissionPolicy',
    metadata: metadata(rule),
    spec: {
      // Fail: a patch the API server cannot apply (a boolean label, a string where a number belongs) refuses the
      // request, as KubeMod's patch does when the patched object is invalid; Ignore would store it unpatched. The
      // guards keep CEL from failing on anything else (see docs/native.md for the cost limit).
      failurePolicy: 'Fail',
      // As the dragnet webhook: when a later webhook changes the object, the rule runs again.
      reinvocationPolicy: 'IfNeeded',
      matchConstraints: constraints(scope, operations),
      matchConditions: early,
      mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: patch } }],
    },
  };
}

/** A Reject rule's ValidatingAdmissionPolicy: denies when the guards hold and every criterion matches. */
export function validatingPolicy(
  rule: CompiledRule,
  parts: PolicyParts,
  scope: DragnetMatch,
  subject: string | undefined,
): JsonObject {
  const operations = ['CREATE', 'UPDATE', 'DELETE'].filter((o) => rule.operations.has(o as 'CREATE'));
  const { early, late } = split(parts);
  const deny = conjunction(late);
  return {
    apiVersion: POLICY_API_VERSION,
    kind: 'ValidatingAdmissionPolicy',
    metadata: metadata(rule),
    spec: {
      // A Reject rule the engine cannot evaluate rejects (fail closed): so does a policy whose CEL fails.
      failurePolicy: 'Fail',
      matchConstraints: constraints(scope, operations),
      matchConditions: early,
      ...(subject ? { variables: [{ name: 'subject', expression: subject }] } : {}),
      validations: [
        {
          expression: `!(${deny})`,
          message: `operation rejected by the following ModRule(s): ${rule.namespace}/${rule.name}`,
          ...(parts.message ? { messageExpression: parts.message } : {}),
          reason: 'Forbidden',
        },
      ],
    },
  };
}

/**
 * The binding that puts a policy in force (everywhere its matchConstraints reach); a validating policy's with
 * `actions` (default Deny; Warn and Audit for Warn/DryRun rules).
 */
export function policyBinding(policy: JsonObject, actions: readonly string[] = ['Deny']): JsonObject {
  const meta = metadataOf(policy);
  const name = String(meta.name);
  const validating = policy.kind === 'ValidatingAdmissionPolicy';
  return {
    apiVersion: POLICY_API_VERSION,
    kind: `${String(policy.kind)}Binding`,
    metadata: { name, labels: meta.labels ?? {}, annotations: meta.annotations ?? {} },
    spec: { policyName: name, ...(validating ? { validationActions: [...actions] } : {}) },
  };
}

const RESOURCES: Record<string, string> = {
  MutatingAdmissionPolicy: 'mutatingadmissionpolicies',
  MutatingAdmissionPolicyBinding: 'mutatingadmissionpolicybindings',
  ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
  ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings',
};

/** The collection of a policy or binding kind, e.g. /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies. */
export function policyCollection(kind: string): string {
  const resource = RESOURCES[kind];
  if (!resource) throw new Error(`not a policy kind: ${kind}`);
  return `/apis/${POLICY_API_VERSION}/${resource}`;
}

/** The path of a policy or binding object. */
export function policyPath(obj: JsonObject): string {
  return `${policyCollection(String(obj.kind))}/${encodeURIComponent(String(metadataOf(obj).name))}`;
}
