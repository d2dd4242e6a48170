import { AdmissionRequest } from './admission';
import { handleValidateModRule } from './modrule';
import { ResourceCatalog } from '../scope/catalog';

function review(object: AdmissionRequest['object']): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: 'api.kubemod.io', version: 'v1beta1', kind: 'ModRule' },
    resource: { group: 'api.kubemod.io', version: 'v1beta1', resource: 'modrules' },
    namespace: 'team-a',
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object,
  } as AdmissionRequest;
}

describe('handleValidateModRule causes', () => {
  it('sends one cause per problem, with the field path and the reason the API server would use', () => {
    const { response } = handleValidateModRule(
      review({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'sloppy', namespace: 'team-a' },
        spec: {
          type: 'Patch',
          matchs: [],
          match: [{ select: '$.kind', matchRegex: '(' }],
          rejectMessage: 'no',
          patch: [{ op: 'add', value: '1' }],
        },
      }),
    );
    expect(response.status).toMatchObject({ code: 422, reason: 'Invalid' });
    const details = response.status?.details;
    expect(details).toMatchObject({ name: 'sloppy', group: 'api.kubemod.io', kind: 'ModRule' });
    const byField = Object.fromEntries((details?.causes ?? []).map((c) => [c.field, c.reason]));
    expect(byField).toEqual({
      'spec.matchs': 'FieldValueNotSupported',
      'spec.match[0].matchRegex': 'FieldValueInvalid',
      'spec.rejectMessage': 'FieldValueForbidden',
      'spec.patch[0].path': 'FieldValueRequired',
    });
    // Every cause's text is also in the message, for clients that print only the message.
    for (const c of details?.causes ?? [])
      expect(response.status?.message).toContain(`${c.field}: ${c.message}`);
  });
});

describe('handleValidateModRule spec.podControllers', () => {
  it('refuses a Pod rule that reads what a pod template cannot answer, at the field and why', () => {
    const { response } = handleValidateModRule(
      review({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'by-name', namespace: 'team-a' },
        spec: {
          type: 'Patch',
          podControllers: ['*'],
          match: [
            { select: '$.kind', matchValue: 'Pod' },
            { select: '$.metadata.name', matchRegex: '^web' },
          ],
          patch: [{ op: 'add', path: '/metadata/labels/web', value: '"yes"' }],
        },
      }),
    );
    expect(response.allowed).toBe(false);
    const causes = response.status?.details?.causes ?? [];
    expect(causes.map((c) => c.field)).toEqual(['spec.match[1].select']);
    expect(causes[0].message).toContain("metadata.name is the pod's own");
    expect(response.status?.message).toContain('spec.match[1].select: ');
  });
});

describe('handleValidateModRule references', () => {
  const withReference = (reference: Record<string, string>) =>
    review({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'peek', namespace: 'team-a' },
      spec: {
        type: 'Patch',
        references: [{ name: 'r', apiVersion: 'v1', objectName: 'x', ...reference }],
        match: [{ select: '$.syntheticRefs.r.data.x' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }],
      },
    });

  it("refuses a tenant's rule naming another namespace, at the field", () => {
    const { response } = handleValidateModRule(withReference({ kind: 'ConfigMap', namespace: 'team-b' }));
    expect(response.status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(response.status?.details?.causes).toEqual([
      {
        field: 'spec.references[0].namespace',
        reason: 'FieldValueForbidden',
        message:
          'Forbidden: a ModRule reads only objects of its own namespace (team-a); only ModRules in kubemod-system ' +
          'may read other namespaces',
      },
    ]);
    // The same rule in the cluster namespace configured here reads any namespace.
    expect(
      handleValidateModRule(withReference({ kind: 'ConfigMap', namespace: 'team-b' }), 'team-a').response
        .allowed,
    ).toBe(true);
  });

  it('refuses a Secret reference unless the operator allows them', () => {
    const secret = withReference({ kind: 'Secret' });
    expect(handleValidateModRule(secret).response.status?.details?.causes).toEqual([
      expect.objectContaining({ field: 'spec.references[0].kind', reason: 'FieldValueForbidden' }),
    ]);
    expect(handleValidateModRule(secret, 'kubemod-system', undefined, true).response.allowed).toBe(true);
  });
});

describe('handleValidateModRule targeting warnings', () => {
  const rule = (namespace: string, extra: Record<string, unknown>) => {
    const request = review({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'wide', namespace },
      spec: { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Pod' }], ...extra },
    });
    request.namespace = namespace;
    return request;
  };
  const selector = { targetNamespaceSelector: { matchLabels: { team: 'a' } } };

  it('admits targeting fields outside the cluster namespace with a warning naming each field', () => {
    const { response } = handleValidateModRule(
      rule('team-a', { ...selector, targetNamespaceRegex: '^team-' }),
      'kubemod-system',
    );
    expect(response.allowed).toBe(true);
    expect(response.warnings).toHaveLength(2);
    expect(response.warnings?.[0]).toMatch(
      /^spec\.targetNamespaceRegex is ignored: only ModRules in namespace kubemod-system/,
    );
    expect(response.warnings?.[1]).toMatch(/^spec\.targetNamespaceSelector is ignored/);
  });

  it('says nothing in the cluster namespace, or without targeting fields', () => {
    expect(
      handleValidateModRule(rule('kubemod-system', selector), 'kubemod-system').response.warnings,
    ).toBeUndefined();
    expect(handleValidateModRule(rule('team-a', {}), 'kubemod-system').response.warnings).toBeUndefined();
    // A configured cluster namespace is honoured.
    expect(handleValidateModRule(rule('platform', selector), 'platform').response.warnings).toBeUndefined();
  });
});

describe('handleValidateModRule idempotence warning', () => {
  const rule = (match: unknown[]) =>
    review({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'sidecar', namespace: 'team-a' },
      spec: {
        type: 'Patch',
        podControllers: ['Deployment'],
        match: [{ select: '$.kind', matchValue: 'Pod' }, ...match],
        patch: [{ op: 'add', path: '/spec/containers/-', value: 'name: agent\nimage: busybox' }],
      },
    } as AdmissionRequest['object']);

  it('admits a rule that changes its own result again, with a warning kubectl prints whole', () => {
    const { response, result } = handleValidateModRule(rule([]), 'kubemod-system');
    expect(result).toBe('allowed');
    expect(response.warnings).toEqual([
      'spec.patch: not idempotent: applied to its own result it changes /spec/containers/5 again (sample Pod web-x2x5k); guard it with a match item its result fails (docs: Idempotency)',
    ]);
    for (const w of response.warnings ?? []) expect(w.length).toBeLessThanOrEqual(256);
  });

  it('says nothing once the append is guarded', () => {
    const guard = { select: '$.spec.containers[*].name', matchValue: 'agent', negate: true };
    expect(handleValidateModRule(rule([guard]), 'kubemod-system').response.warnings).toBeUndefined();
  });
});

describe('handleValidateModRule warnings for kinds the cluster does not serve', () => {
  const catalog = ResourceCatalog.builtin();
  const rule = (kind: string, extra: Record<string, unknown> = {}) =>
    review({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'r', namespace: 'team-a' },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: kind }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
        ...extra,
      },
    });

  it('admits the rule with a warning naming the field and the likely kind', () => {
    const { response, result } = handleValidateModRule(rule('Deploymnet'), 'kubemod-system', () => catalog);
    expect(result).toBe('allowed');
    expect(response.allowed).toBe(true);
    expect(response.warnings).toEqual([
      "spec.match[0].matchValue: kind Deploymnet is not served by this cluster (did you mean Deployment?): the rule matches no object of it until it is, and the dragnet webhook is sent every resource of the rule's namespaces meanwhile",
    ]);
    // kubectl prints warnings of up to 256 characters whole.
    for (const w of response.warnings ?? []) expect(w.length).toBeLessThanOrEqual(256);
  });

  it('says nothing for a served kind, before discovery, or for an invalid rule (its problems say enough)', () => {
    expect(
      handleValidateModRule(rule('Deployment'), 'kubemod-system', () => catalog).response.warnings,
    ).toBeUndefined();
    expect(
      handleValidateModRule(rule('Deploymnet'), 'kubemod-system', () => null).response.warnings,
    ).toBeUndefined();
    const invalid = handleValidateModRule(
      rule('Deploymnet', { rejectMessage: 'x' }),
      'kubemod-system',
      () => catalog,
    );
    expect(invalid.result).toBe('rejected');
    expect(invalid.response.warnings).toBeUndefined();
  });
});
