import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { messageOf } from '../../util/errors';
import { readLive } from '../../scope/ownership';
import { scopeJson } from '../../scope/entry';
import {
  DragnetMatch,
  dragnetMatchOf,
  POLICY_API_VERSION,
  policyCollection,
  policyPath,
  probeEvent,
  probeTokenOf,
  RULE_ANNOTATION,
  tokenOf,
} from '../../native';
import { compileLabelSelector } from '../../rule/labelselector';
import { RuleStore } from '../../store/rules';
import { namespaceLabels } from '../../store/target';
import { isTransient, KubeApiError, KubeClient } from '../../kube/kube';
import { DRAGNET_WEBHOOK, MUTATING_WEBHOOK_CONFIGURATIONS_PATH } from '../../kube/owned';
import { metadataOf } from '../../util/meta';

/*
 * The native policies' side of the API server: whether it serves them, and creating, checking and deleting the
 * policies and bindings the operator owns (label MANAGED_BY=modrule-operator; it never touches others).
 */

/** Label on every policy and binding the operator created; it owns those and only those. */
export const MANAGED_BY = 'app.kubernetes.io/managed-by';
export const OPERATOR = 'modrule-operator';
/** The uid of the ModRule a policy was compiled from. */
export const RULE_UID_ANNOTATION = 'native.modrule.io/rule-uid';

/** The four collections, by kind. */
export const POLICY_KINDS = [
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
] as const;

const RESOURCES = [
  'mutatingadmissionpolicies',
  'mutatingadmissionpolicybindings',
  'validatingadmissionpolicies',
  'validatingadmissionpolicybindings',
];

/** Why the API server cannot serve native policies; undefined when it serves all four resources. */
export async function unavailableReason(client: KubeClient): Promise<string | undefined> {
  let list: JsonObject;
  try {
    list = await client.request('GET', `/apis/${POLICY_API_VERSION}`);
  } catch (err) {
    if (isTransient(err)) throw err;
    return `the API server does not serve ${POLICY_API_VERSION} (${messageOf(err)})`;
  }
  const served = new Set(
    (Array.isArray(list.resources) ? list.resources : []).map((r) => (isJsonObject(r) ? r.name : '')),
  );
  const missing = RESOURCES.filter((r) => !served.has(r));
  if (missing.length === 0) return undefined;
  return (
    `the API server does not serve ${missing.join(', ')} in ${POLICY_API_VERSION} ` +
    '(MutatingAdmissionPolicy is GA from Kubernetes 1.36, ValidatingAdmissionPolicy from 1.30)'
  );
}

/** The object as the operator writes it: owned (label), tied to its rule (uid). */
export function owned(obj: JsonObject, ruleUid: string): JsonObject {
  const meta = metadataOf(obj);
  return {
    ...obj,
    metadata: {
      ...meta,
      labels: { ...((meta.labels as JsonObject) ?? {}), [MANAGED_BY]: OPERATOR },
      annotations: { ...((meta.annotations as JsonObject) ?? {}), [RULE_UID_ANNOTATION]: ruleUid },
    },
  };
}

/** Whether an object is one the operator created. */
export function isOwned(obj: JsonObject): boolean {
  const meta = metadataOf(obj);
  return isJsonObject(meta.labels) && meta.labels[MANAGED_BY] === OPERATOR;
}

/** The rule (namespace/name) an owned object was compiled from. */
export function ruleKeyOf(obj: JsonObject): string | undefined {
  const meta = metadataOf(obj);
  const rule = isJsonObject(meta.annotations) ? meta.annotations[RULE_ANNOTATION] : undefined;
  return typeof rule === 'string' ? rule : undefined;
}

/**
 * Whether `have` still says what `want` says: every field of `want` is there with the same value (lists element by
 * element). Fields the API server defaults and `want` leaves out do not count.
 */
export function contains(have: JsonValue | undefined, want: JsonValue): boolean {
  if (Array.isArray(want))
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => contains(have[i], w));
  if (isJsonObject(want))
    return isJsonObject(have) && Object.keys(want).every((k) => contains(have[k], want[k]));
  return have === want;
}

/** What applying one object came to. */
export type ApplyResult = 'created' | 'updated' | 'unchanged' | { refused: string };

/**
 * Creates the object, or updates it when an owned one says something else; an object of that name the operator did
 * not create is left alone (refused). API errors that are not transient are refused with the API server's message;
 * transient ones throw.
 */
export async function applyOwned(client: KubeClient, want: JsonObject): Promise<ApplyResult> {
  const path = policyPath(want);
  const name = String(metadataOf(want).name);
  for (let attempt = 0; attempt < 3; attempt++) {
    let have: JsonObject | null = null;
    try {
      have = await client.request('GET', path);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) return refusedOrThrow(err);
    }
    try {
      if (!have) {
        await client.request('POST', policyCollection(String(want.kind)), { body: want });
        return 'created';
      }
      if (!isOwned(have))
        return { refused: `a ${String(want.kind)} named ${name} exists that modrule did not create` };
      if (contains(have.spec, want.spec ?? null) && contains(have.metadata, want.metadata))
        return 'unchanged';
      const meta = {
        ...metadataOf(want),
        resourceVersion: metadataOf(have).resourceVersion,
      };
      await client.request('PUT', path, { body: { ...want, metadata: meta } });
      return 'updated';
    } catch (err) {
      // Another replica created or changed it in between: look again.
      if (err instanceof KubeApiError && err.status === 409) continue;
      return refusedOrThrow(err);
    }
  }
  throw new Error(`${String(want.kind)} ${name}: kept changing while being written`);
}

function refusedOrThrow(err: unknown): ApplyResult {
  if (isTransient(err)) throw err;
  return { refused: messageOf(err) };
}

/** Deletes an owned object (binding first is the caller's business); gone or not owned is fine. */
export async function deleteOwned(client: KubeClient, kind: string, name: string): Promise<void> {
  const path = policyPath({ kind, metadata: { name } });
  try {
    const have = await client.request('GET', path);
    if (!isOwned(have)) return;
    // Only the object looked at: not one created under the same name meanwhile.
    const uid = metadataOf(have).uid;
    await client.request('DELETE', path, {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } },
    });
  } catch (err) {
    if (err instanceof KubeApiError && (err.status === 404 || err.status === 409)) return;
    throw err;
  }
}

/**
 * What an API server answered a probe of the policy named `name` with (native/probe.ts): the token of the version
 * of it that marked or refused the dry-run Event, created in `namespace` (one the policy sees); `token` undefined when
 * no version of it did; `refused` when the create was refused for another reason (nothing can be told from it).
 * Transient errors throw.
 */
export async function askProbe(
  client: KubeClient,
  name: string,
  namespace: string,
  labels?: Record<string, string>,
): Promise<{ token: string | undefined } | { refused: string }> {
  try {
    const created = await client.request(
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      {
        body: probeEvent(name, namespace, labels),
        query: { dryRun: 'All' },
      },
    );
    return { token: probeTokenOf(created) };
  } catch (err) {
    if (isTransient(err)) throw err;
    const token = err instanceof KubeApiError ? probeTokenOf(err.message) : undefined;
    return token ? { token } : { refused: messageOf(err) };
  }
}

/**
 * Whether the API server runs `policy` as written, not just stores it: a probe comes back marked or refused with the
 * policy's token. False while its admission plugin has not loaded this version; transient errors throw.
 */
export async function probeInForce(
  client: KubeClient,
  policy: JsonObject,
  namespace: string,
  labels?: Record<string, string>,
): Promise<boolean> {
  const answer = await askProbe(client, String(metadataOf(policy).name), namespace, labels);
  return 'token' in answer && answer.token === tokenOf(policy);
}

/**
 * A namespace the policy sees, to probe it in: the rule's own, else `default`, as long as the dragnet's
 * namespaceSelector admits it (the store's labels of it); undefined when neither is known to be admitted.
 */
export function probeNamespace(
  store: RuleStore,
  scope: DragnetMatch,
  ruleNamespace: string,
): string | undefined {
  const selector = compileLabelSelector(scope.namespaceSelector, 'namespaceSelector', () => undefined);
  if (!selector) return undefined;
  const snapshot = store.snapshot();
  return [ruleNamespace, 'default'].find((ns) => {
    const labels = namespaceLabels(snapshot.namespace(ns));
    return labels !== undefined && selector.matches({ 'kubernetes.io/metadata.name': ns, ...labels });
  });
}

/**
 * The policies' scope: the dragnet webhook's net as installed (bundle.yaml, or a user's edit of it), not the
 * registration narrowed to the rules the webhook serves (scope/, issue 18), which leaves out the rules served
 * natively and would take their namespaces and resources away from their own policies. Undefined: no dragnet.
 */
export function configuredDragnetMatch(config: JsonObject): DragnetMatch | undefined {
  const hooks = Array.isArray(config.webhooks) ? config.webhooks : [];
  const hook = hooks.find((w) => isJsonObject(w) && w.name === DRAGNET_WEBHOOK);
  if (!isJsonObject(hook)) return undefined;
  const { configured } = readLive(config, hook);
  return dragnetMatchOf({ webhooks: [{ ...hook, ...scopeJson(configured) }] });
}

/**
 * A first (and periodic) look at the cluster for native policies: why the API server cannot serve them (undefined:
 * it can), and the dragnet's configured net (undefined: no configuration to read yet).
 */
export async function lookAtCluster(
  client: KubeClient,
  webhookConfiguration: string,
): Promise<{ unavailable: string | undefined; dragnet: DragnetMatch | undefined }> {
  let unavailable: string | undefined;
  try {
    unavailable = await unavailableReason(client);
  } catch (err) {
    unavailable = `cannot tell whether the API server serves admission policies: ${messageOf(err)}`;
  }
  let dragnet: DragnetMatch | undefined;
  try {
    dragnet = configuredDragnetMatch(
      await client.request('GET', `${MUTATING_WEBHOOK_CONFIGURATIONS_PATH}/${webhookConfiguration}`),
    );
  } catch {
    // No dragnet configuration to read (yet).
  }
  return { unavailable, dragnet };
}
