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

describe('handleDragnet: Warn and DryRun rules', () => {
  const modRule = (name: string, spec: JsonObject): JsonObject => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace: 'default' },
    spec: { match: [{ select: '$.kind', matchValue: 'Deployment' }], ...spec },
  });
  const label = (value: string) => [{ op: 'add', path: '/metadata/labels/team', value }];
  const storeOf = (...rules: JsonObject[]) => {
    const s = new RuleStore();
    s.replaceRules(rules);
    return s;
  };
  const answer = (s: RuleStore) =>
    handleDragnet(makeReview('CREATE', loadFixture('deployment')).request, s.snapshot());

  it('Patch + Warn: admitted unpatched, the writer told which rule would change which paths (no values)', () => {
    const d = answer(
      storeOf(modRule('tag', { type: 'Patch', enforcementAction: 'Warn', patch: label('secret-ish') })),
    );
    expect(d.result).toBe('allowed');
    expect(d.response.patch).toBeUndefined();
    expect(d.response.warnings).toEqual([
      'modrule default/tag (Warn) would patch: add /metadata/labels/team',
    ]);
    expect(d.response.auditAnnotations).toEqual({ unenforced: 'default/tag:Warn:patch' });
  });

  it('Patch + DryRun: admitted unpatched, nothing said to the writer, recorded in the outcome', () => {
    const d = answer(
      storeOf(modRule('tag', { type: 'Patch', enforcementAction: 'DryRun', patch: label('x') })),
    );
    expect(d.result).toBe('allowed');
    expect(d.response.patch).toBeUndefined();
    expect(d.response.warnings).toBeUndefined();
    expect(d.outcome?.unenforced.map((u) => [u.rule.name, u.action, u.effect])).toEqual([
      ['tag', 'DryRun', 'patch'],
    ]);
  });

  it('Reject + Warn: admitted, the rejection message as a warning; Reject + DryRun: admitted silently', () => {
    const warn = answer(
      storeOf(
        modRule('deny', {
          type: 'Reject',
          enforcementAction: 'Warn',
          rejectMessage: 'no {{ .Target.kind }}',
        }),
      ),
    );
    expect(warn.result).toBe('allowed');
    expect(warn.response.allowed).toBe(true);
    expect(warn.response.warnings).toEqual(['modrule default/deny (Warn) would reject: no Deployment']);
    const dry = answer(storeOf(modRule('deny', { type: 'Reject', enforcementAction: 'DryRun' })));
    expect(dry.response.allowed).toBe(true);
    expect(dry.response.warnings).toBeUndefined();
    expect(dry.response.auditAnnotations).toEqual({ unenforced: 'default/deny:DryRun:reject' });
  });

  it('an enforced rule beside a Warn one still patches, and the writer hears of both', () => {
    const d = answer(
      storeOf(
        modRule('a-real', {
          type: 'Patch',
          patch: [{ op: 'add', path: '/metadata/labels/real', value: 'yes' }],
        }),
        modRule('b-warn', { type: 'Patch', enforcementAction: 'Warn', patch: label('x') }),
      ),
    );
    expect(d.result).toBe('patched');
    expect(d.applied).toEqual([{ namespace: 'default', name: 'a-real' }]);
    expect(d.response.auditAnnotations).toEqual({
      applied: 'default/a-real',
      unenforced: 'default/b-warn:Warn:patch',
    });
    expect(d.response.warnings).toEqual([
      'modrule default/b-warn (Warn) would patch: add /metadata/labels/team',
    ]);
  });
});
