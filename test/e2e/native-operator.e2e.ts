import { JsonObject } from '../../util/json';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { RunningOperator } from '../../operator/start';
import { policyCollection, policyName } from '../../native';
import { decodePatch, makeReview, postReview } from '../../webhook/testing';
import { apply, remove, waitFor } from './cluster';
import { describeCluster, describeOwn, E2eCluster, startCluster } from './target';
import {
  CONFIGMAPS,
  configMap,
  labelRule,
  labelsOf,
  MODRULES,
  modRule,
  NS,
  policyPath,
  readyOf,
  rule,
  servedBy,
  servedNatively,
  setUp,
} from './native-setup';

/*
 * The operator serving ModRules natively, on a real 1.37 API server: a rule annotated native.modrule.io/serve moves
 * to a policy only after the API server accepted it, the webhook then leaves it alone (but for the residual), the
 * operator heals its policies and removes them with the rule; rules that do not fit, policies the API server refuses
 * and clusters without the API keep the rule on the webhook, with the reason in status (and an Event).
 */

const measured: Record<string, string> = {};
const DRAGNET_CONFIG =
  '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration';

describeCluster('the operator serving ModRules natively (opt-in)', () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let operator: RunningOperator;
  let url: string;

  beforeAll(async () => {
    cp = await startCluster();
    ({ admin, operator, url } = await setUp(cp, 'opt-in'));
  }, 180_000);

  afterAll(async () => {
    await operator?.stop();
    await cp?.stop();
    process.stderr.write(
      `native operator e2e:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  it('moves an annotated rule to its policy once the API server accepted it; the webhook then skips it', async () => {
    const started = Date.now();
    await apply(admin, MODRULES(NS), labelRule('team', 'team', 'platform'));
    const r = await servedNatively(admin, 'team');
    measured['annotated rule to Served=Native'] = `${Date.now() - started} ms`;
    expect(readyOf(r)).toMatchObject({ status: 'True', reason: 'Native' });
    expect(String(readyOf(r)?.message)).toContain(`MutatingAdmissionPolicy modrule.${NS}.team`);
    const name = policyName({ namespace: NS, name: 'team' });
    const policy = await admin.request('GET', policyPath('MutatingAdmissionPolicy', name));
    const binding = await admin.request('GET', policyPath('MutatingAdmissionPolicyBinding', name));
    for (const o of [policy, binding])
      expect((o.metadata as JsonObject).labels).toMatchObject({
        'app.kubernetes.io/managed-by': 'modrule-operator',
      });
    expect(operator.store.nativeRules().get(`${NS}/team`)).toEqual({ partial: true });
    // The API server patches it; the webhook's answer for the same object carries no patch ...
    expect(labelsOf(await configMap(admin)).team).toBe('platform');
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'direct', namespace: NS }, data: {} };
    const ca = operator.caBundle()!;
    const plain = await postReview(url, '/dragnet-webhook', makeReview('CREATE', cm), ca);
    expect(decodePatch(plain.review)).toEqual([]);
    // ... except for objects kubectl applied: their last-applied-configuration is the webhook's to keep in step.
    const applied = {
      ...cm,
      metadata: { ...cm.metadata, annotations: { [LAST_APPLIED_ANNOTATION]: '{}\n' } },
    };
    const residual = await postReview(url, '/dragnet-webhook', makeReview('CREATE', applied), ca);
    expect(decodePatch(residual.review)).toContainEqual({
      op: 'add',
      path: '/metadata/labels',
      value: { team: 'platform' },
    });
    const viaKubectl = await configMap(admin, { [LAST_APPLIED_ANNOTATION]: '{"metadata":{}}\n' });
    expect(labelsOf(viaKubectl).team).toBe('platform');
    expect(
      JSON.parse(
        String(((viaKubectl.metadata as JsonObject).annotations as JsonObject)[LAST_APPLIED_ANNOTATION]),
      ),
    ).toEqual({
      metadata: { labels: { team: 'platform' } },
    });
  });

  it('takes the rule back to the webhook at once when its policy is deleted, and writes the policy again', async () => {
    const name = policyName({ namespace: NS, name: 'team' });
    const deleted = Date.now();
    await admin.request('DELETE', policyPath('MutatingAdmissionPolicy', name));
    await waitFor(
      'the webhook to serve team again',
      async () => !operator.store.nativeRules().has(`${NS}/team`),
      10_000,
      20,
    );
    measured['policy deleted -> webhook serves the rule'] = `${Date.now() - deleted} ms`;
    await waitFor('the policy to be written again', async () =>
      admin.request('GET', policyPath('MutatingAdmissionPolicy', name)),
    );
    await waitFor(
      'team to be native again',
      async () => operator.store.nativeRules().has(`${NS}/team`),
      30_000,
      50,
    );
    measured['policy deleted -> written again and native'] = `${Date.now() - deleted} ms`;
    expect(labelsOf(await configMap(admin)).team).toBe('platform');
  });

  it('puts back a policy edited by someone else', async () => {
    const name = policyName({ namespace: NS, name: 'team' });
    const path = policyPath('MutatingAdmissionPolicy', name);
    const policy = await admin.request('GET', path);
    const spec = policy.spec as JsonObject;
    await admin.request('PUT', path, {
      body: {
        ...policy,
        spec: {
          ...spec,
          mutations: [
            {
              patchType: 'JSONPatch',
              jsonPatch: { expression: '[JSONPatch{op: "test", path: "/kind", value: "ConfigMap"}]' },
            },
          ],
        },
      },
    });
    const healed = await waitFor('the policy to be written back', async () => {
      const p = await admin.request('GET', path);
      return JSON.stringify((p.spec as JsonObject).mutations) === JSON.stringify(spec.mutations)
        ? p
        : undefined;
    });
    expect(healed).toBeDefined();
    await waitFor('team native again', async () => operator.store.nativeRules().has(`${NS}/team`));
    expect(labelsOf(await configMap(admin)).team).toBe('platform');
  });

  it('deletes the policy when the rule no longer asks for it, and when the rule is deleted', async () => {
    const name = policyName({ namespace: NS, name: 'team' });
    await apply(admin, MODRULES(NS), labelRule('team', 'team', 'platform', false));
    await waitFor('the policy to go', async () =>
      admin.request('GET', policyPath('MutatingAdmissionPolicy', name)).then(
        () => false,
        (e: unknown) => e instanceof KubeApiError && e.status === 404,
      ),
    );
    const r = await waitFor('Ready back to Valid', async () => {
      const x = await rule(admin, 'team');
      return readyOf(x)?.reason === 'Valid' ? x : undefined;
    });
    expect(servedBy(r)).toBe('Webhook');
    expect(labelsOf(await configMap(admin)).team).toBe('platform'); // the webhook again
    await apply(admin, MODRULES(NS), labelRule('team', 'team', 'platform'));
    await servedNatively(admin, 'team');
    await remove(admin, `${MODRULES(NS)}/team`);
    await waitFor('the binding to go with the rule', async () =>
      admin.request('GET', policyPath('MutatingAdmissionPolicyBinding', name)).then(
        () => false,
        (e: unknown) => e instanceof KubeApiError && e.status === 404,
      ),
    );
    // The API server drops a deleted policy from its admission caches within about a second.
    await waitFor('the API server to stop running the policy', async () =>
      labelsOf(await configMap(admin)).team === undefined ? true : undefined,
    );
  });

  it('a rule served entirely natively leaves the dragnet registration (issue 18), and comes back with it', async () => {
    const secretsSent = async () => {
      const config = await admin.request('GET', DRAGNET_CONFIG);
      const hook = (config.webhooks as JsonObject[]).find((w) => w.name === 'dragnet.kubemod.io')!;
      return ((hook.rules ?? []) as JsonObject[]).some((r) => (r.resources as string[]).includes('secrets'));
    };
    const noSecrets = (native: boolean) =>
      modRule(
        'no-secrets-here',
        { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Secret' }] },
        native,
      );
    const secret = () =>
      admin
        .request('POST', `/api/v1/namespaces/${NS}/secrets`, {
          body: { apiVersion: 'v1', kind: 'Secret', metadata: { generateName: 's-' }, data: {} },
        })
        .then(
          () => undefined,
          (e: unknown) => e as KubeApiError,
        );
    await apply(admin, MODRULES(NS), noSecrets(false));
    await waitFor('the registration to send Secrets (webhook)', async () => secretsSent());
    await apply(admin, MODRULES(NS), noSecrets(true));
    const r = await servedNatively(admin, 'no-secrets-here');
    expect(String(readyOf(r)?.message)).not.toContain('the webhook keeps');
    expect(operator.store.nativeRules().get(`${NS}/no-secrets-here`)).toEqual({ partial: false });
    await waitFor('the registration to leave Secrets to the policy', async () => !(await secretsSent()));
    expect((await secret())?.message).toContain('no-secrets-here');
    // Back to the webhook (annotation removed): the registration sends Secrets again.
    await apply(admin, MODRULES(NS), noSecrets(false));
    await waitFor('the registration to send Secrets again', async () => secretsSent());
    await remove(admin, `${MODRULES(NS)}/no-secrets-here`);
  });

  it('keeps a rule that does not fit on the webhook, with the reason', async () => {
    await apply(
      admin,
      MODRULES(NS),
      modRule('node-zone', {
        type: 'Patch',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.syntheticRefs.node.metadata.name' },
        ],
        patch: [{ op: 'add', path: '/metadata/labels/zone', value: 'x' }],
      }),
    );
    const r = await waitFor('NotNative', async () => {
      const x = await rule(admin, 'node-zone');
      return readyOf(x)?.reason === 'NotNative' ? x : undefined;
    });
    expect(servedBy(r)).toBe('Webhook');
    expect(readyOf(r)).toMatchObject({ status: 'True' });
    expect(String(readyOf(r)?.message)).toContain('spec.match[1]');
    expect(String(readyOf(r)?.message)).toContain('syntheticRefs.node');
    await remove(admin, `${MODRULES(NS)}/node-zone`);
  });

  // Bad input (issue 19): CEL over the API server's limits, a name that makes no valid policy name. Each is NotNative
  // with the reason, and the webhook keeps serving the rule.
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
  ])('keeps a rule on the webhook for %s', async (_what, name, extra, why) => {
    const spec = {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'ConfigMap' }, ...extra],
      patch: [{ op: 'add', path: '/metadata/labels/bad-input', value: 'webhook' }],
    };
    await apply(admin, MODRULES(NS), modRule(name, spec));
    const r = await waitFor('NotNative', async () => {
      const x = await rule(admin, name);
      return readyOf(x)?.reason === 'NotNative' ? x : undefined;
    });
    expect(servedBy(r)).toBe('Webhook');
    expect(String(readyOf(r)?.message)).toContain(why);
    const cm = await admin.request('POST', CONFIGMAPS, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { generateName: 'bad-input-' },
        data: { tier: `0${'x'.repeat(4000)}` },
      },
    });
    expect(labelsOf(cm)['bad-input']).toBe('webhook');
    await remove(admin, `${MODRULES(NS)}/${name}`);
  });

  it('keeps a rule on the webhook while another rule that runs before it reads what it writes', async () => {
    await apply(
      admin,
      MODRULES(NS),
      modRule(
        'reads-owner',
        {
          type: 'Patch',
          executionTier: -1,
          match: [{ select: '$.kind', matchValue: 'ConfigMap' }, { select: '$.metadata.labels.owner' }],
          patch: [{ op: 'add', path: '/metadata/annotations/owned', value: '"yes"' }],
        },
        false,
      ),
    );
    await apply(admin, MODRULES(NS), labelRule('sets-owner', 'owner', 'platform'));
    const r = await waitFor('NotNative', async () => {
      const x = await rule(admin, 'sets-owner');
      return readyOf(x)?.reason === 'NotNative' ? x : undefined;
    });
    expect(String(readyOf(r)?.message)).toContain(`ModRule ${NS}/reads-owner (tier -1)`);
    // Tier order as before: the owner label is set after reads-owner looked for it.
    const cm = await configMap(admin);
    expect(labelsOf(cm).owner).toBe('platform');
    expect(((cm.metadata as JsonObject).annotations as JsonObject | undefined)?.owned).toBeUndefined();
    await remove(admin, `${MODRULES(NS)}/reads-owner`);
    await remove(admin, `${MODRULES(NS)}/sets-owner`);
  });

  it('keeps the rule on the webhook when a policy of that name is not its own, with the reason and an Event', async () => {
    const name = policyName({ namespace: NS, name: 'no-secrets' });
    await admin.request('POST', policyCollection('ValidatingAdmissionPolicy'), {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name },
        spec: {
          matchConstraints: {
            resourceRules: [
              { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['secrets'] },
            ],
          },
          validations: [{ expression: 'true' }],
        },
      },
    });
    await apply(
      admin,
      MODRULES(NS),
      modRule('no-secrets', {
        type: 'Reject',
        rejectMessage: 'no secrets here',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }, { select: '$.data.password' }],
      }),
    );
    const r = await waitFor('NativeRefused', async () => {
      const x = await rule(admin, 'no-secrets');
      return readyOf(x)?.reason === 'NativeRefused' ? x : undefined;
    });
    expect(servedBy(r)).toBe('Webhook');
    expect(String(readyOf(r)?.message)).toContain('exists that modrule did not create');
    const events = await waitFor('a NativePolicyRefused event', async () => {
      const list = await admin.request('GET', `/api/v1/namespaces/${NS}/events`, {
        query: { fieldSelector: 'involvedObject.name=no-secrets' },
      });
      const items = (list.items ?? []) as JsonObject[];
      return items.some((e) => e.reason === 'NativePolicyRefused') ? items : undefined;
    });
    expect(events.find((e) => e.reason === 'NativePolicyRefused')).toMatchObject({ type: 'Warning' });
    // The foreign policy is left as it was, and the webhook still rejects.
    const foreign = await admin.request('GET', policyPath('ValidatingAdmissionPolicy', name));
    expect((foreign.spec as JsonObject).validations).toEqual([{ expression: 'true' }]);
    const refused = await admin
      .request('POST', CONFIGMAPS, {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'secret-ish' },
          data: { password: 'x' },
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e as KubeApiError,
      );
    expect(refused?.message).toContain('no secrets here');
    await remove(admin, `${MODRULES(NS)}/no-secrets`);
  });

  it('keeps the rule on the webhook when its RBAC does not allow the policy kind, with the reason', async () => {
    const role = '/apis/rbac.authorization.k8s.io/v1/clusterroles/kubemod-operator';
    const before = await admin.request('GET', role);
    const rules = (before.rules as JsonObject[]).map((r) =>
      (r.resources as string[]).includes('validatingadmissionpolicies')
        ? { ...r, resources: ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'] }
        : r,
    );
    await admin.request('PUT', role, { body: { ...before, rules } });
    try {
      await apply(
        admin,
        MODRULES(NS),
        modRule('no-tokens', {
          type: 'Reject',
          match: [{ select: '$.kind', matchValue: 'ConfigMap' }, { select: '$.data.token' }],
        }),
      );
      const r = await waitFor('NativeRefused', async () => {
        const x = await rule(admin, 'no-tokens');
        return readyOf(x)?.reason === 'NativeRefused' ? x : undefined;
      });
      expect(String(readyOf(r)?.message)).toMatch(/403|forbidden/i);
      const refused = await admin
        .request('POST', CONFIGMAPS, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tokenish' }, data: { token: 'x' } },
        })
        .then(
          () => undefined,
          (e: unknown) => e as KubeApiError,
        );
      expect(refused?.status).toBe(403);
    } finally {
      const now = await admin.request('GET', role);
      await admin.request('PUT', role, {
        body: {
          ...before,
          metadata: {
            ...(before.metadata as JsonObject),
            resourceVersion: (now.metadata as JsonObject).resourceVersion,
          },
        },
      });
      await remove(admin, `${MODRULES(NS)}/no-tokens`);
    }
  });
});

// Own control plane only: it starts an API server with the admission policy APIs turned off.
describeOwn('the operator on an API server without admission policies', () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let operator: RunningOperator;

  beforeAll(async () => {
    cp = await startCluster({ admissionPolicies: false });
    ({ admin, operator } = await setUp(cp, 'opt-in'));
  }, 180_000);

  afterAll(async () => {
    await operator?.stop();
    await cp?.stop();
  });

  it('keeps annotated rules on the webhook and says why', async () => {
    await apply(admin, MODRULES(NS), labelRule('team', 'team', 'platform'));
    const r = await waitFor('NativeUnavailable', async () => {
      const x = await rule(admin, 'team');
      return readyOf(x)?.reason === 'NativeUnavailable' ? x : undefined;
    });
    expect(servedBy(r)).toBe('Webhook');
    expect(String(readyOf(r)?.message)).toContain('does not serve mutatingadmissionpolicies');
    expect(labelsOf(await configMap(admin)).team).toBe('platform');
    expect(operator.store.nativeRules().size).toBe(0);
  });
});
