import { AdmissionRequest } from '../admission/types';
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
