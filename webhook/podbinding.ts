import { AdmissionRequest } from './admission';
import { isJsonObject, JsonObject } from '../util/json';
import { Logger } from '../util/logger';
import { EndpointDecision } from './answer';
import { Handler } from './handler';
import { allowResponse } from './review';
import { metadataOf } from '../util/meta';

/** A pod was bound to a node: what the operator needs to decide on the node-ref annotation. */
export interface PodBindingEvent {
  namespace: string;
  podName: string;
  nodeName: string;
  /** The admission request uid, for log correlation. */
  uid: string;
  /** The Binding object as the API server sent it. */
  binding: JsonObject;
}

/** The binding's targets, or a reason why the request is not a usable pods/binding CREATE. */
export function parsePodBinding(request: AdmissionRequest): PodBindingEvent | { skip: string } {
  if (request.operation !== 'CREATE') return { skip: `operation ${request.operation}` };
  if (request.resource?.resource !== 'pods' || request.subResource !== 'binding') {
    return {
      skip: `resource ${request.resource?.resource ?? '?'}/${request.subResource ?? ''} is not pods/binding`,
    };
  }
  const binding = request.object;
  if (!isJsonObject(binding)) return { skip: 'no Binding object' };
  const meta = metadataOf(binding);
  const target = isJsonObject(binding.target) ? binding.target : {};
  const namespace = typeof meta.namespace === 'string' && meta.namespace ? meta.namespace : request.namespace;
  const podName = typeof meta.name === 'string' && meta.name ? meta.name : request.name;
  const nodeName = typeof target.name === 'string' ? target.name : '';
  if (!namespace) return { skip: 'Binding has no namespace' };
  if (!podName) return { skip: 'Binding has no pod name' };
  if (!nodeName) return { skip: 'Binding has no target.name' };
  return { namespace, podName, nodeName, uid: request.uid, binding };
}

/**
 * /podbinding-webhook: always allowed (never block scheduling); returns the event to hand to the operator,
 * or null when there is nothing to do (dry run, not a binding).
 */
export function handlePodBinding(request: AdmissionRequest): EndpointDecision & {
  event: PodBindingEvent | null;
  skipped?: string;
} {
  const response = allowResponse(request.uid);
  if (request.dryRun) return { response, result: 'allowed', event: null, skipped: 'dry run' };
  const parsed = parsePodBinding(request);
  if ('skip' in parsed) return { response, result: 'allowed', event: null, skipped: parsed.skip };
  return { response, result: 'allowed', event: parsed };
}

/** The /podbinding-webhook handler: each binding goes to `onPodBinding`, if any, after the answer. */
export function podBindingHandler(
  onPodBinding: ((binding: PodBindingEvent) => unknown) | undefined,
  logger: Logger,
): Handler {
  return (context) => {
    const decision = handlePodBinding(context.request);
    if (!decision.event)
      logger.debug('pod binding skipped', { uid: context.request.uid, reason: decision.skipped });
    else if (onPodBinding) dispatch(onPodBinding, decision.event, logger);
    return decision;
  };
}

// Not awaited: the API server must not wait on our follow-up pod update.
function dispatch(
  callback: (binding: PodBindingEvent) => unknown,
  event: PodBindingEvent,
  logger: Logger,
): void {
  setImmediate(() => {
    Promise.resolve()
      .then(() => callback(event))
      .catch((err: Error) =>
        logger.error('pod binding handler failed', {
          pod: { namespace: event.namespace, name: event.podName },
          node: event.nodeName,
          error: err?.message,
          stack: err?.stack,
        }),
      );
  });
}
