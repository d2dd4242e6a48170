import { JsonObject } from '../../util/json';
import { eventually } from '../testing/eventually';
import {
  labelRule,
  NS,
  nativeRule,
  policyOf,
  readyOf,
  statusOf,
  useNativeController,
} from '../testing/native-controller';

/*
 * Rules that ask to be served natively but stay on the webhook, with the reason in Ready (and an Event where the API
 * server refused): rules that do not fit a policy or would change what another rule sees, policies the API server
 * refuses or an API it does not serve; transient errors are retried after a delay. Served natively, healed, deleted:
 * native.test.ts. On a real API server: test/e2e/native-operator.e2e.ts.
 */

const h = useNativeController();
const POLICY_WRITES = /admissionpolic(y|ies)/;

/** Waits until the rule's Ready reason is `reason`; returns the Ready condition. */
async function readyWith(rule: string, reason: string): Promise<JsonObject> {
  await eventually(() => expect(readyOf(h.api, rule)).toMatchObject({ status: 'True', reason }));
  return readyOf(h.api, rule) as JsonObject;
}

/** The rule is held by the store and served by the webhook in full. */
function onTheWebhook(rule: string): void {
  expect(statusOf(h.api, rule).servedBy).toBe('Webhook');
  expect(h.store.ruleOf(NS, rule)).toBeDefined();
  expect(h.store.nativeRules().has(`${NS}/${rule}`)).toBe(false);
}

const configMapPatch = (extra: JsonObject[]) => ({
  type: 'Patch',
  match: [{ select: '$.kind', matchValue: 'ConfigMap' }, ...extra],
  patch: [{ op: 'add', path: '/metadata/labels/zone', value: 'x' }],
});

describe('NativeController: rules that stay on the webhook', () => {
  it('keeps a rule that does not compile to a policy, with the field and the reason', async () => {
    await h.start();
    h.api.put(
      'modrules',
      nativeRule('node-zone', configMapPatch([{ select: '$.syntheticRefs.node.metadata.name' }])),
    );
    const ready = await readyWith('node-zone', 'NotNative');
    expect(String(ready.message)).toContain('spec.match[1]');
    expect(String(ready.message)).toContain('syntheticRefs.node');
    onTheWebhook('node-zone');
    expect(h.api.requestsTo('POST', POLICY_WRITES)).toEqual([]);
  });

  it.each([
    [
      'CEL over the limit',
      'long-values',
      [
        {
          select: '$.data.tier',
          matchValues: Array.from({ length: 30 }, (_, i) => `${i}${'x'.repeat(4000)}`),
        },
      ],
      "over the API server's limit of 100000",
    ],
    ['an invalid policy name', `long-${'n'.repeat(240)}`, [], 'longer than 253 characters'],
  ])('keeps a rule for %s, with the reason', async (_what, name, extra, why) => {
    await h.start();
    h.api.put('modrules', nativeRule(name, configMapPatch(extra)));
    expect(String((await readyWith(name, 'NotNative')).message)).toContain(why);
    onTheWebhook(name);
  });

  it('keeps a rule while another rule that runs before it reads what it writes', async () => {
    await h.start();
    const reads: JsonObject = {
      type: 'Patch',
      executionTier: -1,
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }, { select: '$.metadata.labels.owner' }],
      patch: [{ op: 'add', path: '/metadata/annotations/owned', value: '"yes"' }],
    };
    h.api.put('modrules', nativeRule('reads-owner', reads, false));
    h.api.put('modrules', labelRule('sets-owner', 'owner', 'platform'));
    const ready = await readyWith('sets-owner', 'NotNative');
    expect(String(ready.message)).toContain(`ModRule ${NS}/reads-owner (tier -1)`);
    onTheWebhook('sets-owner');
  });

  it('keeps a rule whose policy name is taken by an object it did not create, with an Event; leaves that alone', async () => {
    const foreign = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: policyOf('no-secrets') },
      spec: { validations: [{ expression: 'true' }] },
    };
    h.api.put('validatingadmissionpolicies', foreign);
    await h.start();
    const reject = {
      type: 'Reject',
      rejectMessage: 'no secrets here',
      match: [{ select: '$.data.password' }],
    };
    h.api.put('modrules', nativeRule('no-secrets', reject));
    const ready = await readyWith('no-secrets', 'NativeRefused');
    expect(String(ready.message)).toContain('exists that modrule did not create');
    onTheWebhook('no-secrets');
    await eventually(() =>
      expect(h.api.list('events')).toContainEqual(
        expect.objectContaining({
          type: 'Warning',
          reason: 'NativePolicyRefused',
          involvedObject: expect.objectContaining({ kind: 'ModRule', name: 'no-secrets' }),
        }),
      ),
    );
    expect(h.api.get('validatingadmissionpolicies', null, policyOf('no-secrets'))?.spec).toEqual(
      foreign.spec,
    );
  });

  it('keeps a rule whose policy the API server refuses (403), and says why', async () => {
    h.api.interceptor = (req) =>
      req.method === 'POST' && req.path.endsWith('/validatingadmissionpolicies')
        ? { status: 403, message: 'validatingadmissionpolicies is forbidden: User cannot create resource' }
        : undefined;
    await h.start();
    h.api.put('modrules', nativeRule('no-tokens', { type: 'Reject', match: [{ select: '$.data.token' }] }));
    expect(String((await readyWith('no-tokens', 'NativeRefused')).message)).toMatch(/forbidden/);
    onTheWebhook('no-tokens');
  });

  it('keeps every rule on an API server that does not serve admission policies, and says why', async () => {
    h.api.unserved.add('mutatingadmissionpolicies').add('mutatingadmissionpolicybindings');
    await h.start();
    h.api.put('modrules', labelRule('team', 'team', 'platform'));
    const ready = await readyWith('team', 'NativeUnavailable');
    expect(String(ready.message)).toContain('does not serve mutatingadmissionpolicies');
    onTheWebhook('team');
    expect(h.api.requestsTo('POST', POLICY_WRITES)).toEqual([]);
  });

  it('serves natively once a resync finds the API served', async () => {
    h.api.unserved.add('mutatingadmissionpolicies');
    await h.start({ resyncMs: 100 });
    h.api.put('modrules', labelRule('team', 'team', 'platform'));
    await readyWith('team', 'NativeUnavailable');
    h.api.unserved.clear();
    await eventually(() => expect(statusOf(h.api, 'team').servedBy).toBe('Native'));
  });

  it('retries after a delay when the API server fails, the rule staying on the webhook meanwhile', async () => {
    let failures = 2;
    h.api.interceptor = (req) =>
      req.method === 'POST' && req.path.endsWith('/mutatingadmissionpolicies') && failures-- > 0
        ? { status: 503, message: 'etcdserver: leader changed' }
        : undefined;
    await h.start({ retryMs: 200 });
    h.api.put('modrules', labelRule('team', 'team', 'platform'));
    await eventually(() => expect(statusOf(h.api, 'team').servedBy).toBe('Native'));
    const posts = h.api.requestsTo('POST', /\/mutatingadmissionpolicies$/).map((r) => r.at);
    // The first tries come with the rule's own events; the retry waits for the delay after the first failure.
    expect(posts).toHaveLength(3);
    // The first retry delay is retryMs, jittered to [retryMs/2, retryMs).
    expect(posts[2] - posts[0]).toBeGreaterThanOrEqual(95);
    const retries = h.logs.filter((l) => l.message === 'native policy reconcile failed; retrying');
    expect(retries).toHaveLength(2);
    expect(retries[0]).toMatchObject({ level: 'warn', rule: `${NS}/team` });
    expect(String(retries[0].error)).toContain('leader changed');
    // A transient error is no refusal: Ready never said NativeRefused.
    const reasons = h.api
      .requestsTo('PATCH', /\/modrules\/team\/status$/)
      .flatMap((r) => (((r.body as JsonObject).status as JsonObject)?.conditions as JsonObject[]) ?? [])
      .map((c) => c.reason);
    expect(reasons).not.toContain('NativeRefused');
  });
});
