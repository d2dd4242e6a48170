import { AdmissionRequest, StatusCause } from './admission';
import { withDefaults } from '../rule/defaults';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { formatProblems, ValidationProblem } from '../rule/problems';
import { validateModRule } from '../rule/validate';
import { createPatch } from '../patch/diff';
import { analyzeModRule } from '../rule/compile';
import type { ReferencePolicy } from '../rule/references';
import { idempotenceWarning } from '../engine/idempotence';
import { ResourceCatalog } from '../scope/catalog';
import { describeUnserved, kindField, unservedKindsOf } from '../scope/unserved';
import { EndpointDecision } from './answer';
import { allowResponse, BadRequestError, denyResponse, patchResponse } from './review';

/** HTTP status for an invalid ModRule: 422 Invalid, as the API server answers for invalid objects. */
export const INVALID_MODRULE_CODE = 422;

function objectFor(request: AdmissionRequest): NonNullable<AdmissionRequest['object']> {
  if (!request.object) throw new BadRequestError(`request.object is required for ${request.operation}`);
  return request.object;
}

function displayName(request: AdmissionRequest): string {
  const meta = request.object?.metadata;
  const name =
    (meta &&
      typeof meta === 'object' &&
      !Array.isArray(meta) &&
      typeof meta.name === 'string' &&
      meta.name) ||
    request.name ||
    '(unnamed)';
  return request.namespace ? `${request.namespace}/${name}` : name;
}

/** The API server's field.ErrorType for a problem, from the wording our validation uses. */
function causeReason(message: string): string {
  if (message.startsWith('required')) return 'FieldValueRequired';
  if (message.startsWith('unknown field')) return 'FieldValueNotSupported';
  if (message.startsWith('only allowed') || message.startsWith('Forbidden')) return 'FieldValueForbidden';
  if (message.startsWith('Duplicate')) return 'FieldValueDuplicate';
  return 'FieldValueInvalid';
}

/**
 * Each problem as a status cause, as the API server's own validation reports them: kubectl (1.20 too) prints
 * `The ModRule "x" is invalid:` and then one `field: message` line per cause; without causes only "The request
 * is invalid".
 */
export function statusCauses(problems: readonly ValidationProblem[]): StatusCause[] {
  return problems.map((p) => ({ reason: causeReason(p.message), message: p.message, field: p.field }));
}

const TARGETING_FIELDS = ['targetNamespaceRegex', 'targetNamespaceSelector'] as const;

/**
 * Warnings (kubectl prints them) for targeting fields that a rule outside the cluster namespace carries: they are
 * valid, as in KubeMod, but ignored there, which is rarely what the author meant.
 */
export function targetingWarnings(request: AdmissionRequest, clusterNamespace: string): string[] {
  const namespace = request.namespace || '';
  const spec = request.object?.spec;
  if (namespace === clusterNamespace || !spec || typeof spec !== 'object' || Array.isArray(spec)) return [];
  return TARGETING_FIELDS.filter((f) => spec[f] !== undefined).map(
    (f) =>
      `spec.${f} is ignored: only ModRules in namespace ${clusterNamespace} target other namespaces; ` +
      `this rule applies to objects in ${namespace || 'its own namespace'} only`,
  );
}

/** What the cluster serves now (operator/rules/discovery.ts), null while unknown: the endpoint does not import it. */
export type ServedKinds = () => ResourceCatalog | null;

/**
 * Warnings for kinds a valid rule names that the cluster does not serve (with the served kind each is likely a
 * misspelling of): the rule then matches nothing, and the dragnet's scope fails wide for it.
 */
export function kindWarnings(
  request: AdmissionRequest,
  catalog: ResourceCatalog,
  clusterNamespace: string,
): string[] {
  const rule = request.object ? analyzeModRule(request.object).rule : null;
  if (!rule) return [];
  return unservedKindsOf(rule, catalog, clusterNamespace).map(
    (u) =>
      `${kindField(rule, u.kind)}: ${describeUnserved(u, 'served by this cluster')}: the rule matches no object ` +
      `of it until it is, and the dragnet webhook is sent every resource of the rule's namespaces meanwhile`,
  );
}

/**
 * A warning for a Patch rule that changes its own result again, on the built-in samples (engine/idempotence.ts):
 * the API server sends every change through the webhook, so such a rule keeps changing what it patched.
 */
export function idempotenceWarnings(request: AdmissionRequest, policy: ReferencePolicy): string[] {
  const rule = request.object ? analyzeModRule(request.object, { references: policy }).rule : undefined;
  const warning = rule ? idempotenceWarning(rule) : undefined;
  return warning ? [`spec.patch: ${warning}`] : [];
}

/**
 * /validate-api-kubemod-io-v1beta1-modrule: every problem with its field path, so `kubectl apply` shows them all;
 * valid rules with targeting fields outside `clusterNamespace`, or naming kinds `servedKinds` does not serve, are
 * admitted with a warning. A rule outside `clusterNamespace` referencing another namespace, or a Secret without
 * `allowSecretReferences`, is refused.
 */
export function handleValidateModRule(
  request: AdmissionRequest,
  clusterNamespace: string = DEFAULT_CLUSTER_NAMESPACE,
  servedKinds?: ServedKinds,
  allowSecretReferences = false,
): EndpointDecision {
  if (request.operation === 'DELETE' || request.operation === 'CONNECT') {
    return { response: allowResponse(request.uid), result: 'allowed' };
  }
  // spec.references is checked against where cluster-wide rules live and whether Secrets may be read.
  const policy = { clusterNamespace, allowSecrets: allowSecretReferences };
  const problems = validateModRule(objectFor(request), policy);
  if (problems.length === 0) {
    const response = allowResponse(request.uid);
    const catalog = servedKinds?.();
    const warnings = [
      ...targetingWarnings(request, clusterNamespace),
      ...(catalog ? kindWarnings(request, catalog, clusterNamespace) : []),
      ...idempotenceWarnings(request, policy),
    ];
    if (warnings.length > 0) response.warnings = warnings;
    return { response, result: 'allowed' };
  }
  const message = `ModRule ${displayName(request)} is invalid: ${formatProblems(problems)}`;
  const response = denyResponse(request.uid, INVALID_MODRULE_CODE, 'Invalid', message);
  const meta = request.object?.metadata;
  const name = meta && typeof meta === 'object' && !Array.isArray(meta) ? meta.name : undefined;
  response.status!.details = {
    name: typeof name === 'string' ? name : request.name || undefined,
    group: 'api.kubemod.io',
    kind: 'ModRule',
    causes: statusCauses(problems),
  };
  return { response, result: 'rejected' };
}

/** /mutate-api-kubemod-io-v1beta1-modrule: fills KubeMod's defaults as a patch. */
export function handleMutateModRule(request: AdmissionRequest): EndpointDecision {
  if (request.operation === 'DELETE' || request.operation === 'CONNECT') {
    return { response: allowResponse(request.uid), result: 'allowed' };
  }
  const object = objectFor(request);
  const patch = createPatch(object, withDefaults(object));
  return { response: patchResponse(request.uid, patch), result: patch.length > 0 ? 'patched' : 'allowed' };
}
