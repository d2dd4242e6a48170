import { JsonObject } from '../../util/json';
import { eventually } from '../testing/eventually';
import {
  labelRule,
  NS,
  ownedWatchesCaughtUp,
  policyOf,
  readyOf,
  statusOf,
  useNativeController,
} from '../testing/native-controller';

/*
 * The native controller on the fake API server, wired as the operator wires it: a rule asking for it moves to its
 * policy only once the API server runs it, and goes back to the webhook when its policy is deleted or edited behind
 * the operator (which writes it again), when it stops asking, and when it is deleted (quietly). Rules that stay on
 * the webhook: native-webhook.test.ts. The same behaviours on a real API server: test/e2e/native-operator.e2e.ts.
 */

const h = useNativeController();
const MAP = 'mutatingadmissionpolicies';
const BINDING = 'mutatingadmissionpolicybindings';
const BEHIND = 'native policy changed or deleted behind the operator; back on the webhook';

const servedBy = (rule: string) => statusOf(h.api, rule).servedBy;
const probes = () =>
  h.api.requestsTo('POST', `/api/v1/namespaces/${NS}/events`).filter((r) => r.query.dryRun === 'All');

/** Puts the rule in the fake and waits until the controller handed it to its policy. */
async function servedNatively(rule: JsonObject): Promise<JsonObject> {
  const created = h.api.put('modrules', rule);
  const name = String((rule.metadata as JsonObject).name);
  await eventually(() => expect(servedBy(name)).toBe('Native'));
  return created;
}

/** Whether the rule left the webhook, came back to it, and left it again (in that order). */
function leftCameBackLeft(rule: string): boolean {
  const t = h.nativeTimeline(rule);
  const back = t.indexOf(false, t.indexOf(true));
  return t.indexOf(true) >= 0 && back > 0 && t.indexOf(true, back) > back && t[t.length - 1];
}

describe('NativeController: a rule asking to be served natively', () => {
  it('moves to its policy once the API server runs it: policy and binding written, Served=Native', async () => {
    await h.start();
    const created = await servedNatively(labelRule('team', 'team', 'platform'));
    expect(readyOf(h.api, 'team')).toMatchObject({ status: 'True', reason: 'Native' });
    expect(String(readyOf(h.api, 'team')?.message)).toContain(`MutatingAdmissionPolicy ${policyOf('team')}`);
    const policy = h.api.get(MAP, null, policyOf('team'));
    const binding = h.api.get(BINDING, null, policyOf('team'));
    for (const o of [policy, binding])
      expect(o?.metadata).toMatchObject({
        labels: { 'app.kubernetes.io/managed-by': 'modrule-operator' },
        annotations: {
          'native.modrule.io/rule': `${NS}/team`,
          'native.modrule.io/rule-uid': (created.metadata as JsonObject).uid,
        },
      });
    expect(binding?.spec).toMatchObject({ policyName: policyOf('team') });
    // The store leaves the rule to the policy, but for the objects its guards keep (kubectl's last-applied).
    expect(h.store.nativeRules().get(`${NS}/team`)).toEqual({ partial: true });
    // Handed over after a dry-run probe the policy answered; the probes stored nothing.
    expect(probes().length).toBeGreaterThan(0);
    expect(h.api.list('events')).toEqual([]);
    expect(h.logs).toContainEqual(
      expect.objectContaining({ message: 'ModRule served natively', rule: `${NS}/team`, partial: true }),
    );
  });

  it('stays on the webhook (NativePending) while the API server does not run the policy, probing again shortly', async () => {
    h.api.admission.running = false;
    await h.start();
    h.api.put('modrules', labelRule('team', 'team', 'platform'));
    await eventually(() => expect(readyOf(h.api, 'team')).toMatchObject({ reason: 'NativePending' }));
    expect(servedBy('team')).toBe('Webhook');
    expect(h.api.get(MAP, null, policyOf('team'))).toBeDefined();
    await eventually(() => probes().length >= 8);
    // Past the rule's own events (each probes at once), an unanswered probe is asked again 100 ms later: one chain.
    const at = probes()
      .slice(-3)
      .map((r) => r.at);
    for (let i = 1; i < at.length; i++) expect(at[i] - at[i - 1]).toBeGreaterThanOrEqual(95);
    expect(h.nativeTimeline('team')).not.toContain(true);
    h.api.admission.running = true;
    await eventually(() => expect(servedBy('team')).toBe('Native'));
  });

  it('goes back to the webhook at once when its policy is deleted behind the operator, which writes it again', async () => {
    await h.start();
    await servedNatively(labelRule('team', 'team', 'platform'));
    const before = h.api.get(MAP, null, policyOf('team'));
    h.api.remove(MAP, null, policyOf('team'));
    await eventually(() => leftCameBackLeft('team'));
    const after = h.api.get(MAP, null, policyOf('team'));
    expect((after?.metadata as JsonObject).uid).not.toBe((before?.metadata as JsonObject).uid);
    expect(after?.spec).toEqual(before?.spec);
    await eventually(() => expect(servedBy('team')).toBe('Native'));
    expect(h.logs).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: BEHIND,
        rule: `${NS}/team`,
        object: `MutatingAdmissionPolicy/${policyOf('team')}`,
      }),
    );
  });

  it('puts back a policy edited by someone else, serving the rule by webhook meanwhile', async () => {
    await h.start();
    await servedNatively(labelRule('team', 'team', 'platform'));
    const policy = h.api.get(MAP, null, policyOf('team')) as JsonObject;
    const spec = policy.spec as JsonObject;
    const mutations = [
      {
        patchType: 'JSONPatch',
        jsonPatch: { expression: '[JSONPatch{op: "test", path: "/kind", value: "ConfigMap"}]' },
      },
    ];
    h.api.put(MAP, { ...policy, spec: { ...spec, mutations } });
    await eventually(() => leftCameBackLeft('team'));
    expect(h.api.get(MAP, null, policyOf('team'))?.spec).toEqual(spec);
    expect(h.logs).toContainEqual(expect.objectContaining({ level: 'warn', message: BEHIND }));
  });

  it('deletes policy and binding when the rule stops asking; Ready is Valid again, served by the webhook', async () => {
    await h.start();
    await servedNatively(labelRule('team', 'team', 'platform'));
    h.api.put('modrules', labelRule('team', 'team', 'platform', false));
    await eventually(() => expect(readyOf(h.api, 'team')).toMatchObject({ status: 'True', reason: 'Valid' }));
    expect(servedBy('team')).toBe('Webhook');
    // The status says webhook first; the policy and binding go right after.
    await eventually(() => h.api.list(MAP).length === 0 && h.api.list(BINDING).length === 0);
    expect(h.store.nativeRules().size).toBe(0);
    expect(h.store.ruleOf(NS, 'team')).toBeDefined();
    await ownedWatchesCaughtUp(h);
    expect(h.logs.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('deletes its policy and binding with the rule, and takes its own delete events for no alarm', async () => {
    await h.start();
    await servedNatively(labelRule('team', 'team', 'platform'));
    h.api.remove('modrules', NS, 'team');
    await eventually(() => h.api.list(MAP).length === 0 && h.api.list(BINDING).length === 0);
    await eventually(() =>
      expect(h.logs).toContainEqual(
        expect.objectContaining({ message: 'native policy removed with its ModRule', rule: `${NS}/team` }),
      ),
    );
    expect(h.store.nativeRules().size).toBe(0);
    expect(h.store.ruleOf(NS, 'team')).toBeUndefined();
    // The watch has delivered the deletes: none of them raised the behind-the-operator warning.
    await ownedWatchesCaughtUp(h);
    expect(h.logs.filter((l) => l.message === BEHIND)).toEqual([]);
  });

  it('writes nothing for a rule that does not ask', async () => {
    await h.start();
    h.api.put('modrules', labelRule('plain', 'team', 'platform', false));
    await eventually(() => expect(readyOf(h.api, 'plain')).toMatchObject({ reason: 'Valid' }));
    expect(servedBy('plain')).toBe('Webhook');
    await h.native.idle();
    expect(h.api.requestsTo('POST', /admissionpolic/)).toEqual([]);
    expect(probes()).toEqual([]);
  });
});
