import { AdmissionRequest } from './admission';
import { JsonObject } from '../util/json';
import { annotationsOf, labelsOf, metadataOf } from '../util/meta';
import { createPatch } from '../patch/diff';
import { PROBE_LABEL, PROBE_SEEN_ANNOTATION } from '../scope/probe';
import { EndpointDecision } from './answer';
import { allowResponse, patchResponse } from './review';

/**
 * /dragnet-probe: marks the probe Event (scope/probe.ts) with the token it carries, so the operator that created it
 * (a dry run) sees in the answer that the API server called this webhook, i.e. uses the configuration version that
 * asks for that token. Any replica may answer: it needs no rules. Anything else is allowed unchanged.
 */
export function handleDragnetProbe(request: AdmissionRequest): EndpointDecision {
  const object = request.object;
  const token = object ? labelsOf(object)[PROBE_LABEL] : undefined;
  if (!object || request.operation !== 'CREATE' || !token)
    return { response: allowResponse(request.uid), result: 'allowed' };
  const marked: JsonObject = {
    ...object,
    metadata: {
      ...metadataOf(object),
      annotations: { ...annotationsOf(object), [PROBE_SEEN_ANNOTATION]: token },
    },
  };
  return { response: patchResponse(request.uid, createPatch(object, marked)), result: 'patched' };
}
