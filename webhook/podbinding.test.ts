import { AdmissionRequest } from './admission';
import { JsonObject } from '../util/json';
import { handlePodBinding, parsePodBinding } from './podbinding';

function bindingRequest(
  overrides: Partial<AdmissionRequest> = {},
  object?: JsonObject | null,
): AdmissionRequest {
  return {
    uid: 'b-1',
    kind: { group: '', version: 'v1', kind: 'Binding' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: 'binding',
    name: 'nginx-7c79c4bf97-x2x5k',
    namespace: 'default',
    operation: 'CREATE',
    userInfo: { username: 'system:kube-scheduler' },
    object:
      object === undefined
        ? {
            apiVersion: 'v1',
            kind: 'Binding',
            metadata: { name: 'nginx-7c79c4bf97-x2x5k', namespace: 'default' },
            target: { apiVersion: 'v1', kind: 'Node', name: 'worker-1' },
          }
        : object,
    ...overrides,
  };
}

describe('parsePodBinding', () => {
  it('reads pod namespace, pod name and node from the Binding', () => {
    expect(parsePodBinding(bindingRequest())).toMatchObject({
      namespace: 'default',
      podName: 'nginx-7c79c4bf97-x2x5k',
      nodeName: 'worker-1',
      uid: 'b-1',
    });
  });

  it('falls back to the request for a Binding without metadata', () => {
    const parsed = parsePodBinding(bindingRequest({}, { kind: 'Binding', target: { name: 'worker-2' } }));
    expect(parsed).toMatchObject({
      namespace: 'default',
      podName: 'nginx-7c79c4bf97-x2x5k',
      nodeName: 'worker-2',
    });
  });

  it.each<[string, AdmissionRequest, RegExp]>([
    ['an UPDATE', bindingRequest({ operation: 'UPDATE' }), /operation UPDATE/],
    ['another subresource', bindingRequest({ subResource: 'status' }), /not pods\/binding/],
    [
      'another resource',
      bindingRequest({ resource: { group: '', version: 'v1', resource: 'services' } }),
      /not pods\/binding/,
    ],
    ['no object', bindingRequest({}, null), /no Binding object/],
    [
      'no target',
      bindingRequest({}, { kind: 'Binding', metadata: { name: 'p', namespace: 'default' } }),
      /target.name/,
    ],
    [
      'no namespace anywhere',
      bindingRequest(
        { namespace: undefined },
        { kind: 'Binding', metadata: { name: 'p' }, target: { name: 'n' } },
      ),
      /no namespace/,
    ],
  ])('skips %s', (_name, request, reason) => {
    const parsed = parsePodBinding(request);
    expect('skip' in parsed && parsed.skip).toMatch(reason);
  });
});

describe('handlePodBinding', () => {
  it('always allows; hands over an event only when not a dry run', () => {
    const real = handlePodBinding(bindingRequest());
    expect(real.response).toEqual({ uid: 'b-1', allowed: true });
    expect(real.event?.nodeName).toBe('worker-1');
    const dry = handlePodBinding(bindingRequest({ dryRun: true }));
    expect(dry.response).toEqual({ uid: 'b-1', allowed: true });
    expect(dry.event).toBeNull();
    const junk = handlePodBinding(bindingRequest({}, { kind: 'Binding' }));
    expect(junk.response).toEqual({ uid: 'b-1', allowed: true });
    expect(junk.event).toBeNull();
  });
});
