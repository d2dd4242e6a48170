import { setTimeout as delay } from 'node:timers/promises';
import { JsonObject } from '../../util/json';
import { namespaceOf } from '../../util/meta';
import { RuleIndex } from '../../store/rule-index';
import type { ReferenceSource } from '../../store/references';
import type { RuleSnapshot } from '../../store/rules';
import type { ListableResource } from '../../audit/types';

/** Longest an audited object waits for the reference caches (a watch still listing); then it is evaluated as is. */
export const REFERENCE_WAIT_MS = 10_000;

/**
 * Waits until the reference caches can answer what the rules reaching `item` read (as the webhook holds a request),
 * at most REFERENCE_WAIT_MS: a scan must not hang on a kind that keeps failing to list.
 */
export async function referencesFor(
  source: ReferenceSource,
  snapshot: RuleSnapshot,
  item: JsonObject,
  resource: ListableResource,
): Promise<void> {
  const namespace = resource.namespaced && resource.kind !== 'Namespace' ? namespaceOf(item) || null : null;
  const rules = snapshot.rulesFor(namespace);
  if (!RuleIndex.of(rules).readsReferences) return;
  const wait = source.pending(rules, item, namespace);
  if (!wait) return;
  const timeout = new AbortController();
  await Promise.race([
    wait,
    delay(REFERENCE_WAIT_MS, undefined, { signal: timeout.signal }).catch(() => undefined),
  ]);
  timeout.abort();
}
