import { JsonObject } from '../util/json';
import { applyPatch } from '../patch/rfc6902';
import { PROBE_LABEL, probeEvent, probeSeen } from '../scope/probe';
import { handleDragnetProbe } from './probe';
import { makeReview } from './testing';
import { AdmissionRequest } from './admission';

function answer(object: JsonObject): JsonObject {
  const request = makeReview('CREATE', object).request as AdmissionRequest;
  const { response } = handleDragnetProbe(request);
  expect(response.allowed).toBe(true);
  if (!response.patch) return object;
  return applyPatch(object, JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'))) as JsonObject;
}

test('the probe Event comes back marked with its own token', () => {
  const event = probeEvent('kubemod-system', 'abc123');
  expect(probeSeen(event, 'abc123')).toBe(false);
  const marked = answer(event);
  expect(probeSeen(marked, 'abc123')).toBe(true);
  expect(probeSeen(marked, 'other')).toBe(false);
});

test('an object without the probe label is allowed unchanged', () => {
  const event = probeEvent('kubemod-system', 'abc123');
  delete ((event.metadata as JsonObject).labels as JsonObject)[PROBE_LABEL];
  expect(answer(event)).toEqual(event);
});
