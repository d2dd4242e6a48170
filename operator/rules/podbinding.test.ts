import { loadFixture } from '../../fixtures/load';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { createKubeClient } from '../../kube/kube';
import { createPodBindingHandler, nodeRefPatch } from './podbinding';
import { FakeApiServer } from '../testing/fake-apiserver';

function pod(name: string, annotations: Record<string, string>): JsonObject {
  const p = loadFixture('pod');
  const meta = p.metadata as JsonObject;
  meta.name = name;
  meta.namespace = 'default';
  meta.annotations = annotations; // the fixture pod opts in; each case sets its own
  delete meta.resourceVersion;
  delete meta.uid;
  return p;
}

const annotationsOf = (p: JsonObject | undefined) =>
  ((p?.metadata as JsonObject).annotations ?? {}) as JsonObject;

describe('nodeRefPatch', () => {
  it.each([
    [
      'asks for a node ref',
      { 'ref.kubemod.io/inject-node-ref': 'true' },
      { 'ref.kubemod.io/node': 'node-1' },
    ],
    [
      'has a stale node ref',
      { 'ref.kubemod.io/inject-node-ref': 'true', 'ref.kubemod.io/node': 'old' },
      { 'ref.kubemod.io/node': 'node-1' },
    ],
    [
      'already has this node',
      { 'ref.kubemod.io/inject-node-ref': 'true', 'ref.kubemod.io/node': 'node-1' },
      null,
    ],
    ['did not ask', {}, null],
    ['asks with a non-"true" value', { 'ref.kubemod.io/inject-node-ref': 'yes' }, null],
  ])('pod that %s', (_what, annotations, expected) => {
    const patch = nodeRefPatch(pod('p', annotations), 'node-1');
    expect(patch).toEqual(expected === null ? null : { metadata: { annotations: expected } });
  });
});

describe('pod binding handler against the fake API server', () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = await FakeApiServer.start();
  });
  afterEach(() => api.close());

  const handler = () =>
    createPodBindingHandler({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      backoffMs: 5,
    });

  it('annotates a pod that asked for its node, keeping its other annotations', async () => {
    api.put('pods', pod('web', { 'ref.kubemod.io/inject-node-ref': 'true', keep: 'me' }));
    await expect(handler()({ namespace: 'default', podName: 'web', nodeName: 'node-7' })).resolves.toBe(
      'annotated',
    );
    const annotations = annotationsOf(api.get('pods', 'default', 'web'));
    expect(annotations).toMatchObject({
      'ref.kubemod.io/node': 'node-7',
      keep: 'me',
      'ref.kubemod.io/inject-node-ref': 'true',
    });
    const patch = api.requestsTo('PATCH', '/api/v1/namespaces/default/pods/web');
    expect(patch).toHaveLength(1);
    expect(patch[0].contentType).toBe('application/merge-patch+json');
  });

  it('leaves pods without the opt-in annotation alone', async () => {
    api.put('pods', pod('plain', {}));
    await expect(handler()({ namespace: 'default', podName: 'plain', nodeName: 'node-7' })).resolves.toBe(
      'not-requested',
    );
    expect(api.requestsTo('PATCH', /pods/)).toHaveLength(0);
    expect(annotationsOf(api.get('pods', 'default', 'plain'))['ref.kubemod.io/node']).toBeUndefined();
  });

  it('does not write twice when two replicas handle the same binding', async () => {
    api.put('pods', pod('web', { 'ref.kubemod.io/inject-node-ref': 'true' }));
    const h = handler();
    await h({ namespace: 'default', podName: 'web', nodeName: 'n' });
    await expect(h({ namespace: 'default', podName: 'web', nodeName: 'n' })).resolves.toBe(
      'already-annotated',
    );
    expect(api.requestsTo('PATCH', /pods/)).toHaveLength(1);
  });

  it('retries transient errors, and gives up quietly when the pod is gone', async () => {
    api.put('pods', pod('web', { 'ref.kubemod.io/inject-node-ref': 'true' }));
    let failures = 2;
    api.interceptor = (r) => (r.method === 'PATCH' && failures-- > 0 ? { status: 503 } : undefined);
    await expect(handler()({ namespace: 'default', podName: 'web', nodeName: 'n' })).resolves.toBe(
      'annotated',
    );
    expect(api.requestsTo('PATCH', /pods/)).toHaveLength(3);
    api.interceptor = null;
    await expect(handler()({ namespace: 'default', podName: 'missing', nodeName: 'n' })).resolves.toBe(
      'pod-gone',
    );
  });

  it('reports failure after the retries run out, without throwing', async () => {
    api.put('pods', pod('web', { 'ref.kubemod.io/inject-node-ref': 'true' }));
    api.interceptor = (r) => (r.method === 'PATCH' ? { status: 500 } : undefined);
    await expect(handler()({ namespace: 'default', podName: 'web', nodeName: 'n' })).resolves.toBe('failed');
    expect(api.requestsTo('PATCH', /pods/)).toHaveLength(4);
  });
});
