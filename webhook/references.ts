import { RuleIndex } from '../store/rule-index';
import type { ReferenceSource } from '../store/references';
import type { RuleSnapshot } from '../store/rules';
import { AdmissionRequest } from './admission';
import { storeNamespace } from './dragnet';

/**
 * What a dragnet request must wait for before it is answered: the reference caches catching up with what the rules
 * of its namespace read for its object (a watch still listing its first page, an owner the caches have not seen
 * yet), as the rule store's first sync is waited for. undefined (at once, no promise) for the many requests whose
 * rules read no other object; the caller holds the request on the promise within the API server's timeout, else
 * answers 503 and the webhook's failurePolicy decides. `namespace`: the store namespace, when the caller has it.
 */
export function referencesPending(
  source: ReferenceSource | undefined,
  snapshot: RuleSnapshot,
  request: AdmissionRequest,
  namespace?: string | null,
): Promise<void> | undefined {
  if (!source || request.subResource) return undefined;
  const object = request.operation === 'DELETE' ? request.oldObject : request.object;
  if (!object) return undefined;
  if (namespace === undefined) namespace = storeNamespace(request, object);
  const rules = snapshot.rulesFor(namespace);
  if (!RuleIndex.of(rules).readsReferences) return undefined;
  return source.pending(rules, object, namespace);
}
