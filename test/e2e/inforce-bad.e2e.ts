import { randomBytes } from 'node:crypto';
import { JsonObject } from '../../util/json';
import { KubeApiError } from '../../kube/kube';
import { RunningOperator } from '../../operator/start';
import { CONFIGURED_ANNOTATION, readLive, SCOPE_ANNOTATION } from '../../scope/ownership';
import { dragnetOf, withScope } from '../../scope/entry';
import { apply, remove, waitFor } from './cluster';
import { metricSum } from './metrics';
import { OperatorHarness, operatorHarness } from './operator-harness';
import { roundRobin } from './probes';
import { describeCluster } from './target';
import {
  KINDS,
  LABEL,
  labelRule,
  labelsOf,
  liveRegistration,
  maySend,
  MODRULES,
  MUTATING,
  since,
} from './inforce';

/*
 * Bad input for "a ModRule is in force when its write returns", on a real API server: a flood of 1,000 rules in one
 * apply, two replicas admitting rules at once, and an API server that refuses updates of the webhook configuration
 * (a ValidatingAdmissionPolicy against the operator's ServiceAccount).
 */

const run = randomBytes(3).toString('hex');
const SCOPE = `modrule-e2e-${run}`;
const measured: Record<string, string> = {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
jest.setTimeout(300_000);
const OPERATOR_USER = 'system:serviceaccount:kubemod-system:kubemod-operator';
const POLICY = `inforce-deny-${run}`;
const POLICIES = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';
const BINDINGS = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';
const VALIDATING =
  '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kubemod-validating-webhook-configuration';

async function metrics(op: RunningOperator): Promise<string> {
  return op.webhook.registry.metrics();
}

/** The value of a metric without labels (a gauge, a histogram's _count or _sum). */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

/** Objects of one namespace and kind created at once after their rule; how many came back patched. */
async function patchedAfter(
  h: OperatorHarness,
  pairs: Array<{ ns: string; kind: (typeof KINDS)[number]; value: string }>,
  width: number,
): Promise<number> {
  let patched = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < pairs.length) {
        const { ns, kind, value } = pairs[next++];
        await h.admin.request('POST', MODRULES(ns), {
          body: labelRule(ns, `r-${kind.resource}`, kind.kind, value),
        });
        const obj = await h.admin.request('POST', kind.path(ns), { body: kind.object(ns, `o-${value}`) });
        if (labelsOf(obj)[LABEL] === value) patched++;
      }
    }),
  );
  return patched;
}

describeCluster(`bad input for rules in force at admission (run ${run})`, () => {
  let h: OperatorHarness;
  let op: RunningOperator;

  beforeAll(async () => {
    h = await operatorHarness(SCOPE, { controllerManager: true });
    op = await h.start();
    await waitFor('the operator to be ready', async () => op.isReady());
    await h.namespace(`inforce-warm-${run}`);
    await waitFor('the webhooks to admit ModRules', async () => {
      await apply(
        h.admin,
        MODRULES(`inforce-warm-${run}`),
        labelRule(`inforce-warm-${run}`, 'w', 'Pod', 'x'),
      );
      return true;
    });
  }, 120_000);

  afterAll(async () => {
    await remove(h.admin, `${BINDINGS}/${POLICY}`).catch(() => undefined);
    await remove(h.admin, `${POLICIES}/${POLICY}`).catch(() => undefined);
    await h?.tearDown();
    process.stderr.write(
      `e2e in-force bad-input measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  it('a flood of 1,000 rules in one apply: no rule write times out, every rule in force', async () => {
    const namespaces = Array.from({ length: 100 }, (_, i) => `inforce-f${i}-${run}`);
    for (const ns of namespaces) h.ledger.track(`/api/v1/namespaces/${ns}`);
    const rules = Array.from({ length: 1000 }, (_, j) => {
      const kind = KINDS[Math.floor(j / 100) % KINDS.length];
      return labelRule(namespaces[j % 100], `f-${j}`, kind.kind, `flood-${Math.floor(j / 100)}`);
    });
    const before = await metrics(op);
    const start = process.hrtime.bigint();
    const out = await h.applyFile([
      ...namespaces.map((ns) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { [SCOPE]: 'true' } },
      })),
      ...rules,
    ]);
    const took = since(start);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const after = await metrics(op);
    const writes =
      metricSum(after, 'modrule_dragnet_scope_writes_total', ['result="ok"']) -
      metricSum(before, 'modrule_dragnet_scope_writes_total', ['result="ok"']);
    const waits =
      sample(after, 'modrule_rule_admission_wait_seconds_count') -
      sample(before, 'modrule_rule_admission_wait_seconds_count');
    const waited =
      sample(after, 'modrule_rule_admission_wait_seconds_sum') -
      sample(before, 'modrule_rule_admission_wait_seconds_sum');
    measured[
      '1,000 rules (500 needing a widening) + 100 namespaces in one apply: took / registration writes / admissions / mean wait'
    ] =
      `${Math.round(took)} ms / ${writes} / ${waits} / ${Math.round((waited / Math.max(1, waits)) * 1000)} ms`;
    expect(waits).toBe(1000);
    // Every (namespace, kind) is sent, and an object of each namespace is patched at once.
    const reg = await liveRegistration(h.admin);
    for (const ns of namespaces) for (const kind of KINDS) expect(maySend(reg, kind, ns, SCOPE)).toBe(true);
    let patched = 0;
    for (const ns of namespaces) {
      const obj = await h.admin.request('POST', KINDS[4].path(ns), {
        body: KINDS[4].object(ns, 'after-flood'),
      });
      if (labelsOf(obj)[LABEL] === 'flood-4' || labelsOf(obj)[LABEL] === 'flood-9') patched++;
    }
    expect(patched).toBe(100);
  });

  it('two replicas admitting rules at once: every object patched, and the registration settles (no flapping)', async () => {
    // Two replicas that know each other (in a pod: the Service's EndpointSlices), behind a proxy as behind a Service;
    // the suite's replica steps aside meanwhile (it does not know them: a third replica, not a peer).
    await h.stop(op);
    const [portA, portB, portProxy] = [
      await h.cluster.webhookPort(),
      await h.cluster.webhookPort(),
      await h.cluster.webhookPort(),
    ];
    const at = (port: number) => `https://127.0.0.1:${port}`;
    const a = await h.start({ peers: [at(portB)] }, portA);
    const b = await h.start({ peers: [at(portA)] }, portB);
    await waitFor('both replicas to be ready', async () => a.isReady() && b.isReady());
    const proxy = await roundRobin(portProxy, h.cluster.listenHost, [portA, portB]);
    const repoint = async (port: number) => {
      for (const path of [MUTATING, VALIDATING]) {
        await waitFor(`webhooks of ${path} to call port ${port}`, async () => {
          const config = await h.admin.request('GET', path);
          for (const hook of config.webhooks as JsonObject[]) {
            const cc = hook.clientConfig as JsonObject;
            cc.url = String(cc.url).replace(/:\d+\//, `:${port}/`);
          }
          await h.admin.request('PUT', path, { body: config });
          return true;
        });
      }
    };
    try {
      await repoint(portProxy);
      await sleep(1500);
      const namespaces = Array.from({ length: 20 }, (_, i) => `inforce-two${i}-${run}`);
      for (const ns of namespaces) await h.namespace(ns);
      const pairs = namespaces.flatMap((ns, i) =>
        KINDS.map((kind, k) => ({ ns, kind, value: `two-${i}-${k}` })),
      );
      const patched = await patchedAfter(h, pairs, 8);
      const validated = async (o: RunningOperator) =>
        metricSum(await metrics(o), 'modrule_webhook_requests_total', ['endpoint="validate-modrule"']);
      const [byA, byB] = [await validated(a), await validated(b)];
      const told = async (o: RunningOperator) =>
        metricSum(await metrics(o), 'modrule_peer_notices_total', ['result="ok"']);
      // Two notices per admission: the rule before the answer, then that it was answered.
      expect((await told(a)) + (await told(b))).toBe(200);
      // Settled: the configuration stops changing (both replicas' writes, and the caBundle writer's).
      const version = async () =>
        String(((await h.admin.request('GET', MUTATING)).metadata as JsonObject).resourceVersion);
      let last = '';
      const settleStart = Date.now();
      await waitFor(
        'the registration to settle',
        async () => {
          const v = await version();
          if (v === last) return true;
          last = v;
          return undefined;
        },
        60_000,
        3000,
      );
      const settledIn = Date.now() - settleStart;
      const writes = async (o: RunningOperator) =>
        metricSum(await metrics(o), 'modrule_dragnet_scope_writes_total', ['result="ok"']);
      const settled = (await writes(a)) + (await writes(b));
      await sleep(5000);
      expect(await version()).toBe(last);
      measured[
        'two replicas, 100 rules at once (8 in parallel): objects patched / admitted by A, B / registration writes / settled in'
      ] = `${patched}/100 / ${byA}, ${byB} / ${settled} / ${settledIn} ms`;
      expect(patched).toBe(100);
      expect(byA).toBeGreaterThan(0);
      expect(byB).toBeGreaterThan(0);
      expect((await writes(a)) + (await writes(b))).toBe(settled);
      const reg = await liveRegistration(h.admin);
      for (const { ns, kind } of pairs) expect(maySend(reg, kind, ns, SCOPE)).toBe(true);
    } finally {
      await repoint(Number(new URL(h.url).port)).finally(async () => {
        await proxy.close();
        await h.stop(a);
        await h.stop(b);
        op = await h.start();
        await waitFor("the suite's replica to be ready again", async () => op.isReady());
      });
    }
  });

  it('an API server that refuses the registration update: the configured net stays, the rule says why; a rule it would have to widen for is refused', async () => {
    const policy = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: POLICY },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['admissionregistration.k8s.io'],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['mutatingwebhookconfigurations'],
            },
          ],
        },
        validations: [
          {
            expression: `request.userInfo.username != '${OPERATOR_USER}'`,
            message: 'e2e: the webhook configuration is frozen',
          },
        ],
      },
    };
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: POLICY },
      spec: { policyName: POLICY, validationActions: ['Deny'] },
    };
    const gauge = async () => sample(await metrics(op), 'modrule_dragnet_scope_wide_fallback');
    // 1. The narrowed net can be widened no more: a rule that needs it is refused, saying why, and nothing is stored.
    await h.admin.request('POST', POLICIES, { body: policy });
    await h.admin.request('POST', BINDINGS, { body: binding });
    const frozen = `inforce-frozen-${run}`;
    await h.namespace(frozen);
    await sleep(2000); // the API server loads the policy
    const refused = await h.admin
      .request('POST', MODRULES(frozen), { body: labelRule(frozen, 'new', 'ConfigMap', 'x') })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect((refused as KubeApiError).message).toContain('could not be widened');
    expect((refused as KubeApiError).message).toContain('e2e: the webhook configuration is frozen');
    expect(await h.admin.request('GET', `${MODRULES(frozen)}/new`).catch((e: KubeApiError) => e.status)).toBe(
      404,
    );
    // 2. The configured net is put back by someone allowed to (as a re-applied bundle would, caBundle kept): the
    // operator cannot narrow it, says so, and every rule is in force through it.
    const config = await h.admin.request('GET', MUTATING);
    const meta = config.metadata as JsonObject;
    const annotations = { ...((meta.annotations as JsonObject) ?? {}) };
    const configured = readLive(config, dragnetOf(config)!.webhook).configured;
    delete annotations[SCOPE_ANNOTATION];
    delete annotations[CONFIGURED_ANNOTATION];
    const hooks = (config.webhooks as JsonObject[]).map((w) =>
      w.name === 'dragnet.kubemod.io' ? withScope(w, configured) : w,
    );
    await h.admin.request('PUT', MUTATING, {
      body: { ...config, metadata: { ...meta, annotations }, webhooks: hooks },
    });
    await waitFor('the fallback gauge', async () => (await gauge()) === 1, 30_000, 200);
    const out = await h.applyFile([
      labelRule(frozen, 'new', 'ConfigMap', 'wide'),
      KINDS[0].object(frozen, 'through-the-net'),
    ]);
    expect(out.code).toBe(0);
    const cm = await h.admin.request('GET', `${KINDS[0].path(frozen)}/through-the-net`);
    expect(labelsOf(cm)[LABEL]).toBe('wide');
    const rule = await waitFor(
      'the rule to say the net is held wide',
      async () => {
        const r = await h.admin.request('GET', `${MODRULES(frozen)}/new`);
        const conditions = ((r.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
        const wide = conditions.find((c) => c.type === 'WideFallback');
        return wide?.status === 'True' ? conditions : undefined;
      },
      30_000,
      200,
    );
    const ready = rule.find((c) => c.type === 'Ready')!;
    const wide = rule.find((c) => c.type === 'WideFallback')!;
    expect(ready.status).toBe('True');
    expect(String(ready.message)).toContain('the dragnet registration is held at the configured net');
    expect(String(wide.message)).toContain('e2e: the webhook configuration is frozen');
    measured['refused registration: Ready message'] = String(ready.message).slice(0, 200);
    expect(JSON.stringify(await liveRegistration(h.admin))).toBe(JSON.stringify({ ...configured }));
    // 3. The policy goes: the operator narrows again and the condition clears.
    await remove(h.admin, `${BINDINGS}/${POLICY}`);
    await remove(h.admin, `${POLICIES}/${POLICY}`);
    await waitFor('the fallback gauge to clear', async () => (await gauge()) === 0, 60_000, 500);
    await waitFor(
      'WideFallback to clear',
      async () => {
        const r = await h.admin.request('GET', `${MODRULES(frozen)}/new`);
        const conditions = ((r.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
        return conditions.find((c) => c.type === 'WideFallback')?.status === 'False';
      },
      60_000,
      500,
    );
  });
});
