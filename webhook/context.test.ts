import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { RequestContext, objectRef } from './context';
import { makeReview } from './testing';

describe('RequestContext', () => {
  const deployment = loadFixture('deployment');

  it('names the object by the request, else by its metadata (generateName when it has no name yet)', () => {
    const request = makeReview('CREATE', deployment).request;
    expect(objectRef(request)).toEqual({
      kind: 'Deployment',
      namespace: request.namespace,
      name: request.name,
    });
    const generated: JsonObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { generateName: 'web-', namespace: 'team' },
    };
    const bare = { ...makeReview('CREATE', generated).request, name: '', namespace: undefined };
    expect(objectRef(bare)).toEqual({ kind: 'Pod', namespace: 'team', name: 'web-' });
  });

  it('labels the object as rule statuses name it', () => {
    const request = makeReview('DELETE', null, deployment).request;
    const c = new RequestContext(request, 'dragnet', undefined);
    expect(c.label).toBe(`Deployment ${request.namespace}/${request.name} (DELETE)`);
    const namespace = makeReview('CREATE', { apiVersion: 'v1', kind: 'Namespace', metadata: {} }).request;
    expect(new RequestContext(namespace, 'dragnet', undefined).label).toBe('Namespace (unnamed) (CREATE)');
  });

  it('asks the store about the request namespace, and about none for Namespace objects', () => {
    const inTeam = makeReview('CREATE', deployment).request;
    expect(new RequestContext(inTeam, 'dragnet', undefined).namespace).toBe(inTeam.namespace);
    const ns = {
      ...makeReview('CREATE', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } }).request,
    };
    ns.namespace = 'x'; // the API server names the Namespace itself here
    expect(new RequestContext(ns, 'dragnet', undefined).namespace).toBeNull();
  });

  it('holds for the timeout the API server sends, less a second, shared by every hold of the request', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    try {
      const request = makeReview('CREATE', deployment).request;
      const context = new RequestContext(request, 'dragnet', '/dragnet-webhook?timeout=5s');
      expect(context.holdMs).toBe(4000);
      expect(new RequestContext(request, 'dragnet', '/dragnet-webhook').holdMs).toBe(9000);
      // A later hold gets what the earlier ones left.
      jest.advanceTimersByTime(1500);
      expect(context.holdMs).toBe(2500);
      jest.advanceTimersByTime(5000);
      expect(context.holdMs).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it('builds the log fields once', () => {
    const c = new RequestContext(makeReview('UPDATE', deployment, deployment).request, 'dragnet', undefined);
    expect(c.logFields).toBe(c.logFields);
    expect(c.logFields).toMatchObject({ operation: 'UPDATE', uid: c.request.uid });
  });
});
