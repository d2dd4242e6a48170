import { JsonObject } from '../../util/json';
import { labelsOf } from '../../util/meta';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { KubeApiError } from '../../kube/kube';
import { policyCollection } from '../../native';
import { apply, remove, waitFor } from './cluster';
import { webhookCalls } from './metrics';
import { MODRULES, NativeCluster } from './native-cluster';
import { readyOf, servedBy } from './native-setup';
import { describeCluster, itOwn } from './target';

/*
 * Native rules on the real API server, beyond equivalence (native-differential) and hand-over (native-operator):
 * their objects skip the dragnet webhook unless a guard leaves them there, the rule says what the registration
 * does for it, an API server that refuses conditions on objects makes the registration step down (and the rule
 * says so), deleting a native rule is quiet, and with every operator replica stopped the API server keeps
 * patching and rejecting by the policies (objects kubectl applied, the residual ones, are admitted unpatched, as
 * the dragnet fails open). Runs against an existing cluster too (target.ts).
 */

const applied = { [LAST_APPLIED_ANNOTATION]: '{"metadata":{}}\n' };
const measured: Record<string, string> = {};

describeCluster('native rules and the dragnet webhook', () => {
  let c: NativeCluster;
  let n = 0;
  const rule = (name: string) => c.admin.request('GET', `${MODRULES(c.ns)}/${name}`);
  const native = (name: string, text?: RegExp) =>
    waitFor(`${name} served natively${text ? ` (${String(text)})` : ''}`, async () => {
      const r = await rule(name);
      const message = String(readyOf(r)?.message ?? '');
      return servedBy(r) === 'Native' && (!text || text.test(message)) ? r : undefined;
    });
  const cm = (annotations: JsonObject = {}) => c.configMap(`cm-${++n}`, annotations);
  // Each API server applies a new registration from its own watch: a write that skips the webhook shows it has.
  const settled = () =>
    waitFor('the API server to use the registration', async () => {
      const before = await c.dragnetCalls();
      await cm();
      return (await c.dragnetCalls()) === before;
    });
  const noDenyPolicy = () =>
    c.admin.request('GET', `${policyCollection('ValidatingAdmissionPolicy')}/deny-object-conditions-${c.ns}`);

  beforeAll(async () => {
    c = await NativeCluster.start('native-serving');
    await apply(c.admin, MODRULES(c.ns), c.labelRule('team', 'platform'));
    await apply(
      c.admin,
      MODRULES(c.ns),
      c.modRule('no-forbidden', {
        type: 'Reject',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.metadata.labels.forbidden', matchValue: 'yes' },
        ],
      }),
    );
    await native('team', /only those reach it/);
    await native('no-forbidden');
  }, 240_000);

  afterAll(async () => {
    const problems = c ? await c.stop() : [];
    process.stderr.write(
      `native serving e2e:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
    expect(problems).toEqual([]);
  }, 120_000);

  it('objects every guard accepts skip the webhook; kubectl-applied ones reach it and are patched there', async () => {
    const r = await rule('team');
    expect(readyOf(r)?.message).toMatch(
      /kubectl.kubernetes.io\/last-applied-configuration annotation.*and only those reach it/,
    );
    // The registration's conditions carry the guards (after the hand-over has been written).
    await settled();
    const before = await c.dragnetCalls();
    const metricsBefore = await c.apiServerMetrics();
    for (let i = 0; i < 20; i++) expect(labelsOf(await cm()).team).toBe('platform');
    expect(await c.dragnetCalls()).toBe(before);
    for (let i = 0; i < 5; i++) {
      const o = await cm(applied);
      expect(labelsOf(o).team).toBe('platform');
      // The webhook kept kubectl's annotation in step, as it does for rules it serves.
      const annotations = (o.metadata as JsonObject).annotations as JsonObject;
      const last = JSON.parse(String(annotations[LAST_APPLIED_ANNOTATION])) as JsonObject;
      expect(last).toEqual({ metadata: { labels: { team: 'platform' } } });
    }
    expect(await c.dragnetCalls()).toBe(before + 5);
    const metricsAfter = await c.apiServerMetrics();
    if (metricsBefore && metricsAfter)
      expect(
        webhookCalls(metricsAfter, 'dragnet.kubemod.io') - webhookCalls(metricsBefore, 'dragnet.kubemod.io'),
      ).toBe(5);
    measured['25 ConfigMaps, 5 with last-applied: dragnet calls'] = `${(await c.dragnetCalls()) - before}`;
  });

  it('server-side apply (Helm 4, Argo CD, Flux) carries no last-applied: patched by the policy, no webhook call', async () => {
    const apply = (data: JsonObject) =>
      c.admin.request('PATCH', `/api/v1/namespaces/${c.ns}/configmaps/ssa`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa' }, data },
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: 'e2e-ssa', force: true },
      });
    const before = await c.dragnetCalls();
    const created = await apply({ k: 'v1' });
    expect(labelsOf(created).team).toBe('platform');
    expect((created.metadata as JsonObject).annotations ?? {}).not.toHaveProperty(LAST_APPLIED_ANNOTATION);
    // Applied again without the label: the applier owned it (admission writes under the request's manager), so the
    // apply drops it, and the policy, which runs after the merge, puts it back.
    const updated = await apply({ k: 'v2' });
    expect(labelsOf(updated).team).toBe('platform');
    expect(await c.dragnetCalls()).toBe(before);
  });

  it('a Reject rule on a built-in kind keeps nothing on the webhook: it rejects without a single call', async () => {
    const before = await c.dragnetCalls();
    let refused: KubeApiError | undefined;
    await c.admin
      .request('POST', `/api/v1/namespaces/${c.ns}/configmaps`, {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'bad', labels: { forbidden: 'yes' } },
        },
      })
      .catch((e: unknown) => (refused = e as KubeApiError));
    expect(refused?.message).toContain(
      `operation rejected by the following ModRule(s): ${c.ns}/no-forbidden`,
    );
    await cm(applied);
    // The kubectl-applied ConfigMap still reaches it: for the team rule, not for this one.
    expect(await c.dragnetCalls()).toBe(before + 1);
  });

  it('modrule_native_rules counts the rules asking to be served natively, by state', async () => {
    const text = await c.operators[0]!.webhook.registry.getSingleMetricAsString('modrule_native_rules');
    expect(text).toContain('modrule_native_rules{state="native"} 2');
    expect(text).toContain('modrule_native_rules{state="pending"} 0');
    expect(text).toContain('modrule_native_rules{state="webhook"} 0');
  });

  it('an API server that refuses conditions on objects: the registration steps down, the rule says so', async () => {
    // As a policy engine (or an older API server) might: conditions that read the object are refused.
    const name = `deny-object-conditions-${c.ns}`;
    const policy = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['admissionregistration.k8s.io'],
              apiVersions: ['v1'],
              operations: ['UPDATE'],
              resources: ['mutatingwebhookconfigurations'],
              resourceNames: ['kubemod-mutating-webhook-configuration'],
            },
          ],
        },
        validations: [
          {
            expression:
              "!object.webhooks.exists(w, w.?matchConditions.orValue([]).exists(c, c.expression.contains('type(object)')))",
            message: 'match conditions on objects are not allowed here',
            reason: 'Invalid',
          },
        ],
      },
    };
    await c.admin.request('POST', policyCollection('ValidatingAdmissionPolicy'), { body: policy });
    await c.admin.request('POST', policyCollection('ValidatingAdmissionPolicyBinding'), {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name },
        spec: { policyName: name, validationActions: ['Deny'] },
      },
    });
    try {
      // In force once a dry-run write of such a condition is refused.
      const path =
        '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration';
      await waitFor('the refusing policy in force', async () => {
        const config = await c.admin.request('GET', path);
        const hooks = (config.webhooks as JsonObject[]).map((w) =>
          w.name === 'dragnet.kubemod.io'
            ? { ...w, matchConditions: [{ name: 'probe', expression: 'type(object) == map' }] }
            : w,
        );
        return c.admin
          .request('PUT', path, { body: { ...config, webhooks: hooks }, query: { dryRun: 'All' } })
          .then(
            () => false,
            (e: unknown) => e instanceof KubeApiError && e.status === 422,
          );
      });
      // A rule change makes the operator write the registration again: refused, then written without the guards.
      await apply(c.admin, MODRULES(c.ns), c.labelRule('owner', 'ops'));
      const r = await native('owner', /the API server refused conditions that do/);
      expect(readyOf(r)?.message).toContain('every object of the rule still reaches the webhook');
      const before = await c.dragnetCalls();
      const o = await cm();
      expect(labelsOf(o)).toMatchObject({ team: 'platform', owner: 'ops' });
      expect(await c.dragnetCalls()).toBe(before + 1); // every ConfigMap reaches the webhook again
      expect(c.logs.some((l) => /refused the dragnet scope/.test(l.message))).toBe(true);
    } finally {
      await remove(c.admin, `${policyCollection('ValidatingAdmissionPolicyBinding')}/${name}`);
      await remove(c.admin, `${policyCollection('ValidatingAdmissionPolicy')}/${name}`);
      await remove(c.admin, `${MODRULES(c.ns)}/owner`);
    }
    await expect(noDenyPolicy()).rejects.toThrow();
  });

  it('deleting a native rule is quiet: no "changed or deleted behind the operator" warning', async () => {
    await apply(c.admin, MODRULES(c.ns), c.labelRule('short-lived', 'x'));
    await native('short-lived');
    const from = c.logs.length;
    await remove(c.admin, `${MODRULES(c.ns)}/short-lived`);
    const policy = `${policyCollection('MutatingAdmissionPolicy')}/modrule.${c.ns}.short-lived`;
    await waitFor('its policy to go', () =>
      c.admin.request('GET', policy).then(
        () => false,
        (e: unknown) => e instanceof KubeApiError && e.status === 404,
      ),
    );
    await new Promise((r) => setTimeout(r, 1000)); // the binding's and policy's delete events
    const after = c.logs.slice(from);
    expect(after.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    expect(after.some((l) => l.message === 'native policy removed with its ModRule')).toBe(true);
  });

  it('every replica stopped: the API server still patches and rejects by the policies; residual objects pass unpatched', async () => {
    await native('team');
    await c.stopOperator(0);
    try {
      const started = Date.now();
      expect(labelsOf(await cm()).team).toBe('platform');
      let refused: KubeApiError | undefined;
      await c.admin
        .request('POST', `/api/v1/namespaces/${c.ns}/configmaps`, {
          body: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'bad-2', labels: { forbidden: 'yes' } },
          },
        })
        .catch((e: unknown) => (refused = e as KubeApiError));
      expect(refused?.message).toContain('no-forbidden');
      // The residual: kubectl-applied objects need the webhook (last-applied kept in step), which fails open.
      expect(labelsOf(await cm(applied)).team).toBeUndefined();
      measured['operator stopped: native patch, native reject, residual'] =
        `patched, rejected, admitted unpatched (${Date.now() - started} ms for the three writes)`;
    } finally {
      await c.startOperator();
    }
    await native('team');
    expect(labelsOf(await cm(applied)).team).toBe('platform');
  });

  // Own control plane only: it restarts the API server.
  itOwn('an API server restart keeps serving the policies, and the rules stay native', async () => {
    await native('team');
    const from = c.logs.length;
    await c.cluster.own!.restartApiServer();
    await c.cluster.own!.waitReady();
    const back = Date.now();
    expect(labelsOf(await waitFor('a ConfigMap after the restart', () => cm())).team).toBe('platform');
    // The scope controller fails while the API server is down, then refused (403: RBAC not loaded yet, 429) while
    // it starts; its rules may show NotInForce meanwhile. It retries within 2 s of an unanswered call and 5 s of a
    // refused one, and the probe within 5 s: Ready again well within 20 s of the API server's readyz (it took up to
    // 30 s when a retry waited out a backoff doubling to 30 s).
    const r = await waitFor(
      'team Ready (Native) again',
      async () => {
        const x = await rule('team');
        if (servedBy(x) === 'Native' && readyOf(x)?.reason === 'Native') return x;
        // What the rule says instead is the timeout's message.
        throw new Error(`${String(readyOf(x)?.reason)}: ${String(readyOf(x)?.message)}`);
      },
      20_000,
      100,
    ).catch((err: unknown) => {
      // What the operator said meanwhile goes with the failure.
      const said = c.logs.slice(from);
      process.stderr.write(`operator after the restart:\n${said.map((l) => JSON.stringify(l)).join('\n')}\n`);
      throw err;
    });
    measured['API server restart: team Ready (Native) again after the API server was ready'] =
      `${Date.now() - back} ms`;
    expect(readyOf(r)?.status).toBe('True');
    await waitFor('the operator to hold team natively again', async () =>
      c.operators[0]!.store.nativeRules().has(`${c.ns}/team`),
    );
  });
});
