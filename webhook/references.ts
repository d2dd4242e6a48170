import { RuleIndex } from '../store/rule-index';
import type { ReferenceSource } from '../store/references';
import type { RuleSnapshot } from '../store/rules';
import { AdmissionRequest } from './admission';
import { storeNamespace } from './dragnet';
import { within } from './hold';

/**
 * Holds a dragnet request until the reference caches can answer what the rules of its namespace read for its
 * object (a watch still listing its first page, an owner the caches have not seen yet), as the rule store's first
 * sync is waited for: true when they can (at once for the many requests whose rules read no other object), false
 * when `ms` ran out first (the caller answers 503 and the webhook's failurePolicy decides).
 */
export async function referencesReady(
  source: ReferenceSource | undefined,
  snapshot: RuleSnapshot,
  request: AdmissionRequest,
  ms: number,
): Promise<boolean> {
  if (!source || request.subResource) return true;
  const object = request.operation === 'DELETE' ? request.oldObject : request.object;
  if (!object) return true;
  const namespace = storeNamespace(request, object);
  const rules = snapshot.rulesFor(namespace);
  if (!RuleIndex.of(rules).readsReferences) return true;
  const wait = source.pending(rules, object, namespace);
  return !wait || within(wait, ms);
}
