import { AdmissionRequest } from './admission';
import { handleValidateModRule } from './modrule';

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
