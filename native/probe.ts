import { createHash } from 'node:crypto';
import { JsonObject } from '../util/json';
import { celString } from './cel';
import { metadataOf, annotationsOf } from '../util/meta';

/*
 * How the operator knows a policy is in force, not just stored: the API server's admission plugins load policies
 * and bindings through their own caches, so a rule handed over right after the policy was accepted may meet an API
 * server that does not run it yet (seen in the e2e suite: an object admitted unpatched). Every policy therefore
 * answers one more request: a dry-run create of an Event annotated native.modrule.io/probe=<policy name>, which it
 * marks (mutating) or refuses (validating) with a token of its own content. The webhook leaves the rule to the
 * policy only once an API server answered with the token of the version just written. Events are never patched
 * or refused otherwise: for them the policy's first condition is the probe annotation.
 */

export const PROBE_ANNOTATION = 'native.modrule.io/probe';
export const PROBED_ANNOTATION = 'native.modrule.io/probed';
const IS_EVENT = 'request.resource.resource == "events"';

/** A short hash of a policy's spec: what a probe's answer must carry. */
export function probeToken(spec: JsonObject): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
}

/** The policy, also answering probes (Events annotated with its name) with the token of its spec. */
export function withProbe(policy: JsonObject): JsonObject {
  const meta = metadataOf(policy);
  const spec = policy.spec as JsonObject;
  const token = probeToken(spec);
  const name = String(meta.name);
  const constraints = spec.matchConstraints as JsonObject;
  const conditions = (spec.matchConditions as JsonObject[]).map((c) => ({
    name: c.name,
    expression: `${IS_EVENT} || (${String(c.expression)})`,
  }));
  const probe = {
    name: 'native-probe',
    expression:
      `!(${IS_EVENT}) || ` +
      `object[?"metadata"][?"annotations"][?${celString(PROBE_ANNOTATION)}].orValue("") == ${celString(name)}`,
  };
  const events = {
    apiGroups: [''],
    apiVersions: ['v1'],
    resources: ['events'],
    operations: ['CREATE'],
    scope: 'Namespaced',
  };
  const probed: JsonObject = {
    ...spec,
    matchConstraints: {
      ...constraints,
      resourceRules: [...(constraints.resourceRules as JsonObject[]), events],
    },
    matchConditions: [probe, ...conditions],
  };
  if (policy.kind === 'MutatingAdmissionPolicy') {
    const [mutation] = spec.mutations as JsonObject[];
    const patch = String((mutation.jsonPatch as JsonObject).expression);
    const mark =
      `[JSONPatch{op: "add", path: ${celString(`/metadata/annotations/${PROBED_ANNOTATION.replace('/', '~1')}`)}, ` +
      `value: ${celString(token)}}]`;
    probed.mutations = [{ ...mutation, jsonPatch: { expression: `${IS_EVENT} ? ${mark} : (${patch})` } }];
  } else {
    const [validation] = spec.validations as JsonObject[];
    const message = validation.messageExpression ?? celString(String(validation.message));
    probed.validations = [
      {
        ...validation,
        expression: `${IS_EVENT} ? false : (${String(validation.expression)})`,
        messageExpression: `${IS_EVENT} ? ${celString(`native probe ${token}`)} : (${String(message)})`,
      },
    ];
  }
  return {
    ...policy,
    metadata: {
      ...meta,
      annotations: { ...((meta.annotations as JsonObject) ?? {}), [PROBED_ANNOTATION]: token },
    },
    spec: probed,
  };
}

/** The token a written policy answers probes with. */
export function tokenOf(policy: JsonObject): string {
  const annotations = metadataOf(policy).annotations as JsonObject | undefined;
  return String(annotations?.[PROBED_ANNOTATION] ?? '');
}

/**
 * The Event the operator creates (dry run) in `namespace` to ask whether the policy is in force; `labels` for a
 * policy whose objectSelector asks for some.
 */
export function probeEvent(
  policyName: string,
  namespace: string,
  labels?: Record<string, string>,
): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      generateName: 'modrule-native-probe-',
      namespace,
      annotations: { [PROBE_ANNOTATION]: policyName },
      ...(labels ? { labels } : {}),
    },
    involvedObject: { apiVersion: 'v1', kind: 'Namespace', name: namespace, namespace },
    reason: 'NativePolicyProbe',
    message: 'dry run: is the policy in force?',
    type: 'Normal',
  };
}

/** Whether a probe's answer (the created Event, or the refusal's message) carries the token. */
export function probeAnswered(answer: JsonObject | string, token: string): boolean {
  return probeTokenOf(answer) === token;
}

const REFUSED_WITH = /native probe ([0-9a-f]+)/;

/**
 * The token a probe's answer carries: which version of the policy marked (the created Event) or refused (the
 * refusal's message) it; undefined when no version of it did (the API server does not run the policy).
 */
export function probeTokenOf(answer: JsonObject | string): string | undefined {
  if (typeof answer === 'string') return REFUSED_WITH.exec(answer)?.[1];
  const token = annotationsOf(answer)[PROBED_ANNOTATION];
  return typeof token === 'string' ? token : undefined;
}
