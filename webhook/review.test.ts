import { loadFixture } from '../fixtures/load';
import {
  BadRequestError,
  denyResponse,
  encodeReview,
  parseAdmissionReview,
  patchResponse,
  reviewResponse,
} from './review';
import { makeReview } from './testing';
import { messageOf } from '../util/errors';

describe('parseAdmissionReview', () => {
  const valid = makeReview('CREATE', loadFixture('deployment'));

  it.each(['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const)(
    'accepts a %s review',
    (apiVersion) => {
      const parsed = parseAdmissionReview(JSON.stringify({ ...valid, apiVersion }));
      expect(parsed.apiVersion).toBe(apiVersion);
      expect(parsed.request.uid).toBe(valid.request.uid);
      expect(parsed.request.object).toEqual(loadFixture('deployment'));
    },
  );

  const bad: Array<[string, string, RegExp]> = [
    ['not JSON', '{"apiVersion": ', /not valid JSON/],
    ['an array', '[]', /must be a JSON object/],
    [
      'wrong kind',
      JSON.stringify({ ...valid, kind: 'Deployment' }),
      /kind must be "AdmissionReview", got "Deployment"/,
    ],
    ['missing kind', JSON.stringify({ apiVersion: valid.apiVersion, request: valid.request }), /got nothing/],
    [
      'wrong apiVersion',
      JSON.stringify({ ...valid, apiVersion: 'admission.k8s.io/v2' }),
      /apiVersion must be one of/,
    ],
    [
      'missing request',
      JSON.stringify({ apiVersion: valid.apiVersion, kind: 'AdmissionReview' }),
      /request is missing/,
    ],
    [
      'missing uid',
      JSON.stringify({ ...valid, request: { ...valid.request, uid: undefined } }),
      /request.uid/,
    ],
    ['empty uid', JSON.stringify({ ...valid, request: { ...valid.request, uid: '' } }), /request.uid/],
    [
      'bad operation',
      JSON.stringify({ ...valid, request: { ...valid.request, operation: 'PATCH' } }),
      /operation/,
    ],
    [
      'object a string',
      JSON.stringify({ ...valid, request: { ...valid.request, object: 'x' } }),
      /request.object must be an object/,
    ],
    [
      'object an array',
      JSON.stringify({ ...valid, request: { ...valid.request, object: [] } }),
      /got an array/,
    ],
    [
      'oldObject a number',
      JSON.stringify({ ...valid, request: { ...valid.request, oldObject: 3 } }),
      /request.oldObject/,
    ],
    [
      'namespace a number',
      JSON.stringify({ ...valid, request: { ...valid.request, namespace: 3 } }),
      /request.namespace/,
    ],
    [
      'dryRun a string',
      JSON.stringify({ ...valid, request: { ...valid.request, dryRun: 'yes' } }),
      /request.dryRun/,
    ],
  ];
  it.each(bad)('rejects %s with a clear reason', (_name, body, reason) => {
    let error: unknown;
    try {
      parseAdmissionReview(body);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).status).toBe(400);
    expect(messageOf(error)).toMatch(reason);
  });
});

describe('responses', () => {
  it('puts the patch in base64 with patchType only when non-empty', () => {
    expect(patchResponse('u1', [])).toEqual({ uid: 'u1', allowed: true });
    const ops = [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }];
    const r = patchResponse('u1', ops);
    expect(r.patchType).toBe('JSONPatch');
    expect(JSON.parse(Buffer.from(r.patch as string, 'base64').toString('utf8'))).toEqual(ops);
  });

  it('answers in the version asked and echoes the uid', () => {
    const review = reviewResponse('admission.k8s.io/v1beta1', denyResponse('u2', 403, 'Forbidden', 'no'));
    expect(review).toEqual({
      apiVersion: 'admission.k8s.io/v1beta1',
      kind: 'AdmissionReview',
      response: {
        uid: 'u2',
        allowed: false,
        status: { status: 'Failure', code: 403, reason: 'Forbidden', message: 'no' },
      },
    });
  });

  describe('encodeReview', () => {
    const ops = [
      { op: 'add', path: '/metadata/labels/team', value: 'plat"form\\ é' },
      { op: 'add', path: '/metadata/annotations/a~1b', value: { nested: ['x', 1, null] } },
    ];
    const decode = (body: Buffer) => JSON.parse(body.toString('utf8')) as Record<string, unknown>;

    it('writes the same review JSON.stringify would, for a patch, with warnings and audit annotations', () => {
      const r = patchResponse('u1', ops);
      r.warnings = ['rule "x" failed: \u0001 <odd>'];
      r.auditAnnotations = { applied: 'ns/a,ns/b' };
      const body = encodeReview('admission.k8s.io/v1', r);
      expect(decode(body)).toEqual(reviewResponse('admission.k8s.io/v1', r));
      const patch = (decode(body).response as { patch: string }).patch;
      expect(JSON.parse(Buffer.from(patch, 'base64').toString('utf8'))).toEqual(ops);
    });

    it('encodes responses without a patch, and a patch changed after patchResponse, the plain way', () => {
      for (const r of [
        patchResponse('u1', []),
        denyResponse('u2', 403, 'Forbidden', 'no "way"'),
        { ...patchResponse('u3', ops) }, // a copy: not the response patchResponse made
        Object.assign(patchResponse('u4', ops), { patch: 'not base64 "quoted"' }),
      ]) {
        const body = encodeReview('admission.k8s.io/v1beta1', r);
        expect(body.toString('utf8')).toBe(JSON.stringify(reviewResponse('admission.k8s.io/v1beta1', r)));
      }
    });
  });
});
