import { Registry } from 'prom-client';
import { JsonObject } from '../util/json';
import { memoryLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { generateCertificates, GeneratedCertificates } from './certs';
import { RunningWebhook, WEBHOOK_PATHS } from './server';
import { makeReview, postReview, startTestServer } from './testing';

// The ModRule webhooks fail closed (failurePolicy Fail): that holds for modrule's own failures too. An exception
// while validating or while making the rule in force must refuse the write, never store a rule that is not in force.

const rule: JsonObject = {
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name: 'add-owner', namespace: 'shop', uid: 'u-1', generation: 1 },
  spec: {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'shop' }],
  },
};

describe('the ModRule validation endpoint on an internal error', () => {
  let certs: GeneratedCertificates;
  let server: RunningWebhook;
  const log = memoryLogger();
  const registry = new Registry();

  beforeAll(async () => {
    certs = generateCertificates({ hosts: ['127.0.0.1'] });
    server = await startTestServer(new RuleStore(), certs, {
      logger: log.logger,
      registry,
      ruleAdmission: async (request) => {
        if (request.dryRun) return {};
        throw new Error('the scope controller is gone');
      },
    });
  });
  afterAll(() => server.close());

  it('refuses the write (500, nothing stored), logs it and counts it', async () => {
    const { review } = await postReview(
      server.url,
      WEBHOOK_PATHS.validateModRule,
      makeReview('CREATE', rule),
      certs.caCert,
    );
    expect(review.response).toMatchObject({
      allowed: false,
      status: { code: 500, reason: 'InternalError' },
    });
    expect(review.response?.status?.message).toMatch(
      /ModRule shop\/add-owner was not admitted: modrule failed while admitting it \(the scope controller is gone\); nothing was stored: retry/,
    );
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        message: 'admission handler failed; refused',
        endpoint: 'validate-modrule',
      }),
    );
    expect(await registry.metrics()).toContain(
      'modrule_webhook_fail_closed_total{endpoint="validate-modrule",reason="handler_error"} 1',
    );
  });

  it('still allows a dry run, which asks nothing of the hook', async () => {
    const review = makeReview('CREATE', rule, null, { dryRun: true });
    const answer = await postReview(server.url, WEBHOOK_PATHS.validateModRule, review, certs.caCert);
    expect(answer.review.response?.allowed).toBe(true);
  });
});
