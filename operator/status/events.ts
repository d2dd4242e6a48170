import { createHash } from 'node:crypto';
import { JsonObject } from '../../util/json';
import { generationOf, metaString, nameOf, namespaceOf } from '../../util/meta';
import { MODRULE_API_VERSION, MODRULE_KIND } from '../../rule/types';
import { isoSeconds, truncateMessage } from './facets';

// The Warning Events the operator puts on ModRules, named after their content so that replicas create each once.

export const INVALID_EVENT_REASON = 'InvalidModRule';
export const DEMOTED_EVENT_REASON = 'NamespaceDemoted';

/** The parts of a ModRule's metadata status writes and Events name. */
export interface RuleIdentity {
  namespace: string;
  name: string;
  uid: string;
  generation: number | undefined;
  resourceVersion: string;
}

/** The rule's identity, or null without name/namespace. */
export function identity(rule: JsonObject): RuleIdentity | null {
  const namespace = namespaceOf(rule);
  const name = nameOf(rule);
  if (!namespace || !name) return null;
  return {
    namespace,
    name,
    uid: metaString(rule, 'uid'),
    generation: generationOf(rule),
    resourceVersion: metaString(rule, 'resourceVersion'),
  };
}

/** What a Warning Event on a ModRule says, and who says it when. */
export interface WarningEventOptions {
  reason: string;
  message: string;
  /** What makes two Events the same: the Event's name hashes it, so replicas create the same one once. */
  digestOf: string;
  now: Date;
  /** The replica reporting (reportingInstance). */
  instance: string;
}

/** A core/v1 Warning Event on a ModRule; the name hashes `digestOf`, so replicas create the same one once. */
export function warningEvent(id: RuleIdentity, options: WarningEventOptions): JsonObject {
  const { reason, message, digestOf, now, instance } = options;
  const digest = createHash('sha256').update(digestOf).digest('hex').slice(0, 16);
  const time = isoSeconds(now.getTime());
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${id.name.slice(0, 200)}.${digest}`, namespace: id.namespace },
    involvedObject: {
      apiVersion: MODRULE_API_VERSION,
      kind: MODRULE_KIND,
      name: id.name,
      namespace: id.namespace,
      ...(id.uid ? { uid: id.uid } : {}),
      ...(id.resourceVersion ? { resourceVersion: id.resourceVersion } : {}),
    },
    reason,
    message: truncateMessage(message),
    type: 'Warning',
    source: { component: 'modrule-operator' },
    reportingComponent: 'modrule-operator',
    reportingInstance: instance,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

/** The Warning Event of an invalid rule, once per uid, generation and message. */
export function invalidRuleEvent(id: RuleIdentity, message: string, now: Date, instance: string): JsonObject {
  return warningEvent(id, {
    reason: INVALID_EVENT_REASON,
    message: `ModRule is invalid and is not applied: ${message}`,
    digestOf: `${id.uid}\n${id.generation ?? ''}\n${message}`,
    now,
    instance,
  });
}

/**
 * A Warning Event on a rule of a namespace the webhook demoted (its requests got a small budget for a while). The
 * name hashes the rule, reason and minute, so replicas demoting the same namespace at once write it only once.
 */
export function demotedRuleEvent(
  rule: { namespace: string; name: string },
  reason: string,
  now: Date,
  instance: string,
): JsonObject {
  const id: RuleIdentity = { ...rule, uid: '', generation: undefined, resourceVersion: '' };
  const message =
    `namespace ${rule.namespace} demoted (${reason}): this rule ran in a request that was too expensive; ` +
    `the namespace's admissions get a small evaluation budget for a while (see modrule_namespace_demotions_total)`;
  const minute = Math.floor(now.getTime() / 60_000);
  const digestOf = `${id.name}\n${reason}\n${minute}`;
  return warningEvent(id, { reason: DEMOTED_EVENT_REASON, message, digestOf, now, instance });
}
