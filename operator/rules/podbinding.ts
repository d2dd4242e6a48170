import { isJsonObject, JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { INJECT_NODE_REF_ANNOTATION, NODE_REF_ANNOTATION } from '../../rule/types';
import { retry } from '../../kube/backoff';
import { isTransient, KubeApiError, KubeClient, MERGE_PATCH } from '../../kube/kube';
import { messageOf } from '../../util/errors';
import { metadataOf, annotationsOf } from '../../util/meta';

/** What the /podbinding-webhook hands over for every pods/binding CREATE that is not a dry run. */
export interface PodBinding {
  namespace: string;
  podName: string;
  nodeName: string;
}

export interface PodBindingOptions {
  client: KubeClient;
  logger: Logger;
  /** Tries for transient API errors; default 4. */
  attempts?: number;
  backoffMs?: number;
}

/** What handling one binding did, for logs and tests. */
export type PodBindingResult = 'annotated' | 'not-requested' | 'already-annotated' | 'pod-gone' | 'failed';

/** The annotation patch a pod needs, or null when it did not ask for a node reference or already has this one. */
export function nodeRefPatch(pod: JsonObject, nodeName: string): JsonObject | null {
  const meta = metadataOf(pod);
  const annotations = isJsonObject(meta.annotations) ? meta.annotations : {};
  if (annotations[INJECT_NODE_REF_ANNOTATION] !== 'true') return null;
  if (annotations[NODE_REF_ANNOTATION] === nodeName) return null;
  return { metadata: { annotations: { [NODE_REF_ANNOTATION]: nodeName } } };
}

/**
 * KubeMod's node references: when a pod that has ref.kubemod.io/inject-node-ref: "true" is bound to a node, set
 * ref.kubemod.io/node on it. The resulting UPDATE passes the dragnet webhook, which injects the Node manifest from
 * the node cache as syntheticRefs.node. A merge patch of one annotation is idempotent, so replicas may race freely.
 */
export function createPodBindingHandler(
  options: PodBindingOptions,
): (binding: PodBinding) => Promise<PodBindingResult> {
  const { client, logger } = options;
  return async ({ namespace, podName, nodeName }) => {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(podName)}`;
    const log = { namespace, pod: podName, node: nodeName };
    const policy = {
      attempts: options.attempts ?? 4,
      isTransient,
      backoff: { initialMs: options.backoffMs ?? 200, maxMs: 5000 },
    };
    try {
      const pod = await retry(() => client.request('GET', path), policy);
      const patch = nodeRefPatch(pod, nodeName);
      if (!patch) {
        return annotationsOf(pod)[INJECT_NODE_REF_ANNOTATION] === 'true'
          ? 'already-annotated'
          : 'not-requested';
      }
      await retry(() => client.request('PATCH', path, { body: patch, contentType: MERGE_PATCH }), policy);
      logger.info('node reference added to pod', log);
      return 'annotated';
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return 'pod-gone';
      logger.error('failed to add node reference to pod', { ...log, error: messageOf(err) });
      return 'failed';
    }
  };
}
