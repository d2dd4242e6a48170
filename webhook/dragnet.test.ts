import { AdmissionRequest } from './admission';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { RuleSnapshot, RuleStore } from '../store/rules';
import { rejectionMessage } from '../engine/rejection';
import { handleDragnet, storeNamespace } from './dragnet';
import { BadRequestError } from './review';
import { makeReview } from './testing';

describe('storeNamespace', () => {
  it.each<[string, AdmissionRequest, string | null]>([
    ['a namespaced object', makeReview('CREATE', loadFixture('deployment')).request, 'default'],
    [
      'a Namespace named as its own namespace',
      { ...makeReview('UPDATE', loadFixture('namespace')).request, namespace: 'default' },
      null,
    ],
    ['a Node', makeReview('CREATE', loadFixture('node')).request, null],
    [
      'an empty namespace',
      { ...makeReview('CREATE', loadFixture('deployment')).request, namespace: '' },
      null,
    ],
  ])('%s', (_name, request, expected) => {
    expect(storeNamespace(request, request.object ?? null)).toBe(expected);
  });
});

describe('rejectionMessage', () => {
  it('names every rule with its rendered message, as KubeMod does', () => {
    expect(
      rejectionMessage([
        { rule: { namespace: 'default', name: 'a' }, message: 'no "root"' },
        { rule: { namespace: 'kubemod-system', name: 'b' }, message: '' },
      ]),
    ).toBe('operation rejected by the following ModRule(s): default/a: "no "root"",kubemod-system/b');
  });
});

describe('handleDragnet', () => {
  const store = new RuleStore();
  store.replaceRules([
    {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'team', namespace: 'default' },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'Deployment' }],
        patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
      },
    },
  ]);

  it('requires an object for CREATE and UPDATE', () => {
    const request = { ...makeReview('CREATE', loadFixture('deployment')).request, object: null };
    expect(() => handleDragnet(request, store.snapshot())).toThrow(BadRequestError);
  });

  it('fails open with a warning when evaluation itself throws', () => {
    const broken: RuleSnapshot = {
      clusterNamespace: 'kubemod-system',
      ruleCount: 1,
      namespaceCount: 0,
      nodeCount: 0,
      rulesFor: () => {
        throw new Error('snapshot corrupted');
      },
      namespace: () => undefined,
      node: () => undefined,
    };
    const decision = handleDragnet(makeReview('CREATE', loadFixture('deployment')).request, broken);
    expect(decision.result).toBe('error');
    expect(decision.response.allowed).toBe(true);
    expect(decision.response.patch).toBeUndefined();
    expect(decision.response.warnings).toEqual([expect.stringContaining('snapshot corrupted')]);
  });

  it('patches from the snapshot it is given, and names the applied rule', () => {
    const decision = handleDragnet(makeReview('CREATE', loadFixture('deployment')).request, store.snapshot());
    expect(decision.result).toBe('patched');
    expect(decision.applied).toEqual([{ namespace: 'default', name: 'team' }]);
    expect((decision.outcome?.object?.metadata as JsonObject).labels).toEqual({
      app: 'nginx',
      team: 'platform',
    });
  });
});
