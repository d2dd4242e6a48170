import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { stringifyManifests } from '../../util/yaml';
import { PATCHED_BY_ANNOTATION } from '../../engine/record';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { RunningOperator, startOperator } from '../../operator/start';
import { runProcess } from '../cli';
import { apply, ClusterLedger, e2eSettings, remove, waitFor, webhookManifests } from './cluster';
import { installBundle } from './install';
import { kubectl } from './kubectl';
import { describeCluster, E2eCluster, startCluster } from './target';

/*
 * Which rule changed an object, on a real API server with kubectl: the opt-in record (modrule.io/patched-by) under
 * client-side and server-side apply, `kubectl diff` and label edits; `modrule explain` on live objects as a separate
 * process reading the kubeconfig; what `kubectl apply` shows of an invalid ModRule; the Served column.
 * On a control plane of its own or an existing cluster (target.ts). Nothing is restarted; every name is unique to the
 * run, and what the run creates is deleted (what it replaces is put back).
 */

const settings = e2eSettings();
const run = randomBytes(3).toString('hex');
const NS = `explain-e2e-${run}`;
const SCOPE_LABEL = `modrule-e2e-${run}`;
const NODE = `explain-e2e-node-${run}`;
const CLUSTER_RULE = `e2e-${run}-pci-label`;
const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
const ROOT = join(__dirname, '..', '..');

const modRule = (namespace: string, name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace },
  spec,
});
// Labels a ConfigMap once (only while the label is missing: the idempotent way); sets a data key every time.
const TEAM = modRule(NS, 'team-label', {
  type: 'Patch',
  match: [
    { select: '$.kind', matchValue: 'ConfigMap' },
    { select: '$.metadata.labels.team', negate: true },
  ],
  patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
});
const MODE = modRule(NS, 'mode', {
  type: 'Patch',
  executionTier: -1,
  match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
  patch: [{ op: 'add', path: '/data/mode', value: 'strict' }],
});
// Copies the zone of the Node a Pod is bound to (syntheticRefs.node) onto the Pod.
const ZONE = modRule(NS, 'zone-from-node', {
  type: 'Patch',
  match: [{ select: '$.kind', matchValue: 'Pod' }, { select: '$.syntheticRefs.node.metadata.labels.zone' }],
  patch: [
    {
      op: 'add',
      path: '/metadata/labels/zone',
      value: '{{ index .Target.syntheticRefs.node.metadata.labels "zone" }}',
    },
  ],
});

const configMap = (name: string): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: NS },
  data: { a: '1' },
});
const meta = (o: JsonObject) => o.metadata as JsonObject;
const annotation = (o: JsonObject) =>
  (meta(o).annotations as JsonObject | undefined)?.[PATCHED_BY_ANNOTATION];

describeCluster(`which rule changed an object, on a real API server (namespace ${NS})`, () => {
  let cp: E2eCluster | null = null;
  let admin: KubeClient;
  let ledger: ClusterLedger;
  let operator: RunningOperator | null = null;
  let kubeconfig = '';
  let kubectlBin = 'kubectl';
  const k = (args: string[], stdin = '') => kubectl(kubectlBin, kubeconfig, args, stdin);
  const modrule = (args: string[]) => runProcess('modrule', args, { env: { KUBECONFIG: kubeconfig } });
  const get = (path: string) => admin.request('GET', path);

  beforeAll(async () => {
    cp = await startCluster();
    kubeconfig = cp.kubeConfigPath;
    kubectlBin = cp.kubectl ?? 'kubectl';
    const host = cp.webhookHost;
    const port = await cp.webhookPort();
    admin = cp.admin();
    ledger = new ClusterLedger(admin);
    await installBundle(admin, ledger);
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { [SCOPE_LABEL]: 'true', env: `prod-${run}` } },
    });
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: NODE, labels: { zone: `zone-${run}` } },
    });
    const { mutating, validating } = webhookManifests(`https://${host}:${port}`, SCOPE_LABEL);
    await ledger.apply(mutating);
    await ledger.apply(validating);
    ledger.track(`/api/v1/namespaces/${settings.clusterNamespace}/secrets/kubemod-webhook-server-cert`);
    operator = await startOperator(
      {
        clusterNamespace: settings.clusterNamespace,
        podNamespace: settings.clusterNamespace,
        webhookPort: port,
        healthPort: 0,
        host: cp.listenHost,
        certMode: 'self',
        certDir: '',
        extraHosts: [host],
        recordPatchedBy: true,
      },
      { client: admin, logger: silentLogger() },
    );
    await waitFor('the operator to be ready', async () => operator?.isReady());
    await waitFor('the ModRule webhooks', async () => {
      for (const rule of [TEAM, MODE, ZONE]) await apply(admin, MODRULES(NS), rule);
      return true;
    });
    await apply(
      admin,
      MODRULES(settings.clusterNamespace),
      modRule(settings.clusterNamespace, CLUSTER_RULE, {
        type: 'Patch',
        targetNamespaceSelector: { matchLabels: { env: `prod-${run}` } },
        match: [{ select: '$.kind', matchValue: 'Pod' }],
        patch: [{ op: 'add', path: '/metadata/labels/compliance', value: 'pci' }],
      }),
    );
    ledger.track(`${MODRULES(settings.clusterNamespace)}/${CLUSTER_RULE}`);
    // In force once a ConfigMap created now gets both rules' changes.
    await waitFor('the rules to be in force', async () => {
      const probe = await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: { ...configMap(`probe-${randomBytes(2).toString('hex')}`) },
      });
      return annotation(probe) === `${NS}/mode,${NS}/team-label`;
    });
  });

  afterAll(async () => {
    await operator?.stop();
    const problems = admin && ledger ? await ledger.restore() : [];
    await cp?.stop();
    if (problems.length > 0)
      throw new Error(`e2e: the cluster is not as it was found:\n${problems.join('\n')}`);
  });

  it('records the rules that patched an object; kubectl apply again, kubectl diff and server-side apply change nothing', async () => {
    const manifest = stringifyManifests([configMap('client-side')]);
    expect((await k(['apply', '-f', '-'], manifest)).code).toBe(0);
    const stored = await get(`/api/v1/namespaces/${NS}/configmaps/client-side`);
    expect(annotation(stored)).toBe(`${NS}/mode,${NS}/team-label`);
    // Not in last-applied: client-side apply must not think it owns the record.
    expect(
      String((meta(stored).annotations as JsonObject)['kubectl.kubernetes.io/last-applied-configuration']),
    ).not.toContain(PATCHED_BY_ANNOTATION);
    expect((await k(['apply', '-f', '-'], manifest)).code).toBe(0);
    expect((await k(['diff', '-f', '-'], manifest)).code).toBe(0);
    expect(meta(await get(`/api/v1/namespaces/${NS}/configmaps/client-side`)).resourceVersion).toBe(
      meta(stored).resourceVersion,
    );

    const ssa = stringifyManifests([configMap('server-side')]);
    expect((await k(['apply', '--server-side', '-f', '-'], ssa)).code).toBe(0);
    const first = await get(`/api/v1/namespaces/${NS}/configmaps/server-side`);
    expect(annotation(first)).toBe(`${NS}/mode,${NS}/team-label`);
    // The label stays (no field manager owns what a webhook adds), so team-label no longer matches: still named.
    expect((await k(['apply', '--server-side', '-f', '-'], ssa)).code).toBe(0);
    expect((await k(['diff', '--server-side', '-f', '-'], ssa)).code).toBe(0);
    const again = await get(`/api/v1/namespaces/${NS}/configmaps/server-side`);
    expect(meta(again).resourceVersion).toBe(meta(first).resourceVersion);
    expect(annotation(again)).toBe(`${NS}/mode,${NS}/team-label`);
  });

  it('keeps a rule whose change is in place through kubectl label, and drops a rule that is deleted', async () => {
    await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, { body: configMap('labelled') });
    expect((await k(['label', 'configmap', 'labelled', '-n', NS, 'tier=web'])).code).toBe(0);
    expect(annotation(await get(`/api/v1/namespaces/${NS}/configmaps/labelled`))).toBe(
      `${NS}/mode,${NS}/team-label`,
    );
    await remove(admin, `${MODRULES(NS)}/team-label`);
    await waitFor('the deleted rule to leave the record', async () => {
      await k([
        'label',
        'configmap',
        'labelled',
        '-n',
        NS,
        `tier=t${randomBytes(2).toString('hex')}`,
        '--overwrite',
      ]);
      return annotation(await get(`/api/v1/namespaces/${NS}/configmaps/labelled`)) === `${NS}/mode`;
    });
    await apply(admin, MODRULES(NS), TEAM);
  });

  it('modrule explain reads the live object and says which rule would patch it and why (exit 2), or none (exit 0)', async () => {
    await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
      body: {
        ...configMap('plain'),
        metadata: { name: 'plain', namespace: NS, labels: { [`skip-${run}`]: 'x' } },
      },
    });
    // Created before a rule that now applies to it: the webhook has not patched it yet.
    await apply(
      admin,
      MODRULES(NS),
      modRule(NS, 'owner', {
        type: 'Patch',
        match: [{ select: `$.metadata.labels['skip-${run}']` }],
        patch: [{ op: 'add', path: '/metadata/annotations/owner', value: 'shop' }],
      }),
    );
    const r = await modrule(['explain', 'cm/plain', '-n', NS]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`ConfigMap ${NS}/plain (UPDATE):\n`);
    expect(r.stdout).toContain(`  ${NS}/owner [Patch, tier 0]: matched\n`);
    expect(r.stdout).toContain('    patch: add /metadata/annotations/owner = "shop"\n');
    expect(r.stdout).toContain(`recorded (${PATCHED_BY_ANNOTATION}): ${NS}/mode,${NS}/team-label\n`);
    expect(r.stdout).toMatch(
      /would be patched \(matched: .*\):\n {2}add \/metadata\/annotations\/owner = "shop"\n$/,
    );
    const none = await modrule(['explain', 'configmap', 'client-side', '-n', NS, '-o', 'json']);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({
      verdict: 'pass',
      patch: [],
      object: { kind: 'ConfigMap', name: 'client-side' },
    });
    await remove(admin, `${MODRULES(NS)}/owner`);
  });

  it("modrule explain injects what the webhook does: the Namespace (a rule selecting it by label) and a Pod's Node", async () => {
    // Pods need their namespace's default ServiceAccount, which only a controller-manager creates.
    await admin
      .request('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
        body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } },
      })
      .catch((err: unknown) => {
        if (!(err instanceof KubeApiError && err.status === 409)) throw err;
      });
    await admin.request('POST', `/api/v1/namespaces/${NS}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: NS, annotations: { 'ref.kubemod.io/node': NODE } },
        spec: {
          containers: [{ name: 'web', image: 'nginx:1.25' }],
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 0,
        },
      },
    });
    // The webhook patched it at creation with both rules; explain finds them again on the live object.
    expect(meta(await get(`/api/v1/namespaces/${NS}/pods/web`)).labels).toEqual({
      zone: `zone-${run}`,
      compliance: 'pci',
    });
    const r = await modrule(['explain', 'pod/web', '-n', NS, '-o', 'json']);
    expect(r.code).toBe(0); // its changes are in place: nothing would change
    const result = JSON.parse(r.stdout) as { rules: string[]; explanation: { rules: JsonObject[] } };
    // Both tier 0: in namespace/name order.
    expect(result.rules).toEqual([`${NS}/zone-from-node`, `${settings.clusterNamespace}/${CLUSTER_RULE}`]);
    const zone = result.explanation.rules.find((x) => x.rule === `${NS}/zone-from-node`)!;
    expect((zone.items as JsonObject[])[1]).toMatchObject({
      select: '$.syntheticRefs.node.metadata.labels.zone',
      results: [{ value: `zone-${run}` }],
      matched: true,
    });
    expect(zone.operations).toEqual([{ op: 'add', path: '/metadata/labels/zone', value: `zone-${run}` }]);
    const pci = result.explanation.rules.find(
      (x) => x.rule === `${settings.clusterNamespace}/${CLUSTER_RULE}`,
    );
    expect(pci).toMatchObject({ status: 'matched' });
  });

  it('kubectl apply shows an invalid ModRule one kind of problem at a time; modrule validate all at once', async () => {
    const text = readFileSync(join(ROOT, 'fixtures', 'invalid-modrule.yaml'), 'utf8');
    const rounds = [
      [text, /strict decoding error: unknown field "spec\.match\[0\]\.negatee"/],
      [text.replace('      negatee: true\n', ''), /spec\.patch\[0\]\.value: Invalid value: "boolean"/],
      [
        text.replace('      negatee: true\n', '').replace('value: y', "value: 'true'"),
        /spec\.match\[0\]\.select: column 10: expected a path/,
      ],
    ] as const;
    for (const [manifest, shown] of rounds) {
      const out = await k(['apply', '-n', NS, '-f', '-'], manifest);
      expect(out.code).not.toBe(0);
      expect(out.stderr).toMatch(shown);
      for (const [, other] of rounds.filter(([, o]) => o !== shown)) expect(out.stderr).not.toMatch(other);
    }
    const validate = await runProcess('modrule', [
      'validate',
      join(ROOT, 'fixtures', 'invalid-modrule.yaml'),
    ]);
    expect(validate.code).toBe(2);
    for (const field of ['spec.match[0].negatee', 'spec.patch[0].value', 'spec.match[0].select'])
      expect(validate.stdout).toContain(`ModRule invalid-in-three-stages: ${field}: `);
  });

  it('kubectl get modrules shows who serves each rule: Webhook', async () => {
    const out = await waitFor('Served on every rule', async () => {
      const r = await k(['get', 'modrules', '-n', NS]);
      return r.stdout.split('\n').filter((l) => /\bWebhook\b/.test(l)).length === 3 ? r.stdout : undefined;
    });
    expect(out.split('\n')[0]).toMatch(/^NAME\s+TYPE\s+TIER\s+READY\s+SERVED\s+STATUS\s+AGE$/);
    expect(out).toMatch(/\nmode\s+Patch\s+-1\s+True\s+Webhook\s+ModRule is valid and in effect\s+\S+\n/);
  });
});
