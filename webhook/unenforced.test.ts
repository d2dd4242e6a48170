import { JsonObject } from '../util/json';
import { loadFixture } from '../fixtures/load';
import { RuleStore } from '../store/rules';
import { generateCertificates, GeneratedCertificates } from './certs';
import { RuleUnenforced } from './rule-unenforced';
import { RunningWebhook, WEBHOOK_PATHS } from './server';
import { decodePatch, makeReview, postReview, send, startTestServer } from './testing';

// Warn/DryRun rules and rule pairs over HTTP: what the writer gets, the per-rule metrics and the record the operator
// shows on the rule.

let certs: GeneratedCertificates;
let server: RunningWebhook;
const unenforced = new RuleUnenforced({ windowMs: 60_000 });

const modRule = (name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: 'default' },
  spec: { match: [{ select: '$.kind', matchValue: 'Deployment' }], ...spec },
});
const label = (key: string, value: string) => [{ op: 'add', path: `/metadata/labels/${key}`, value }];

beforeAll(async () => {
  certs = generateCertificates({ hosts: ['127.0.0.1'] });
  const store = new RuleStore();
  expect(
    store.replaceRules([
      modRule('dry-tag', { type: 'Patch', enforcementAction: 'DryRun', patch: label('team', 'web') }),
      modRule('warn-deny', { type: 'Reject', enforcementAction: 'Warn', rejectMessage: 'needs an owner' }),
      modRule('first', { type: 'Patch', patch: label('tier', 'front') }),
      modRule('second', { type: 'Patch', patch: label('tier', 'back') }),
    ]),
  ).toEqual([]);
  server = await startTestServer(store, certs, { unenforced });
});
afterAll(() => server.close());

async function create(name: string) {
  const object = loadFixture('deployment');
  (object.metadata as JsonObject).name = name;
  return (await postReview(server.url, WEBHOOK_PATHS.dragnet, makeReview('CREATE', object), certs.caCert))
    .review;
}

async function metric(line: RegExp): Promise<number> {
  const text = (await send(`${server.healthUrl}/metrics`)).body;
  const found = text.split('\n').find((l) => line.test(l));
  return found ? Number(found.split(' ').pop()) : NaN;
}

describe('Warn and DryRun rules, and a rule undoing another, over HTTP', () => {
  it('admits, warns for the Warn rule only, and patches with the enforced rules', async () => {
    const review = await create('web-0');
    const response = review.response!;
    expect(response.allowed).toBe(true);
    expect(response.warnings).toEqual(['modrule default/warn-deny (Warn) would reject: needs an owner']);
    // Only the enforced rules' label, the later one's value.
    const patch = decodePatch(review) as Array<{ path: string; value?: unknown }>;
    expect(patch.filter((p) => p.path.startsWith('/metadata/labels'))).toEqual([
      { op: 'add', path: '/metadata/labels/tier', value: 'back' },
    ]);
  });

  it('counts would-be patches and rejections per rule and mode, and overrides per pair', async () => {
    for (let i = 1; i < 5; i++) await create(`web-${i}`);
    expect(
      await metric(/^modrule_rule_would_patch_total\{namespace="default",name="dry-tag",mode="DryRun"\}/),
    ).toBe(5);
    expect(
      await metric(/^modrule_rule_would_reject_total\{namespace="default",name="warn-deny",mode="Warn"\}/),
    ).toBe(5);
    expect(
      await metric(
        /^modrule_rule_overrides_total\{namespace="default",name="first",by_namespace="default",by_name="second"\}/,
      ),
    ).toBe(5);
  });

  it('records each rule with its count and last object for the operator', () => {
    const records = unenforced.current().sort((a, b) => a.rule.name.localeCompare(b.rule.name));
    expect(records).toEqual([
      expect.objectContaining({
        rule: { namespace: 'default', name: 'dry-tag' },
        count: 5,
        action: 'DryRun',
        lastEffect: 'patch',
        lastSummary: 'would patch: add /metadata/labels/team',
        lastObject: expect.stringContaining('web-4'),
      }),
      expect.objectContaining({
        rule: { namespace: 'default', name: 'warn-deny' },
        count: 5,
        action: 'Warn',
        lastEffect: 'reject',
        lastSummary: 'would reject: needs an owner',
      }),
    ]);
  });
});
