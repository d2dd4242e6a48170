import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { parseYamlDocuments } from '../../util/yaml';
import { createLogger, silentLogger } from '../../util/logger';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { DEFAULT_OWNER_KINDS } from '../../operator/references/owners';
import { RunningOperator, startOperator } from '../../operator/start';
import { ClusterLedger, e2eSettings, remove, waitFor, webhookManifests } from './cluster';
import { serviceAccountClient } from './credentials';
import { installBundle } from './install';
import { describeCluster, E2eCluster, startCluster } from './target';

/*
 * Rules that read other objects, on a real API server with the control plane's own controllers: a Deployment's
 * ReplicaSet and Pods get labels copied through syntheticRefs.owner (two levels), a CronJob's Job too; a central
 * ConfigMap's edit reaches the next object within a second, its deletion shows on the rule's status; tenant rules
 * naming another namespace, and Secrets without the flag, are refused at admission; an owner of a kind the operator
 * may not read leaves a clear status. Own control plane (with kube-controller-manager) or an existing cluster
 * (target.ts): unique names, nothing restarted, everything it made removed at the end.
 */

const settings = e2eSettings();
const run = randomBytes(3).toString('hex');
const NS = `refs-e2e-${run}`;
const PLATFORM = `refs-platform-${run}`;
const SCOPE_LABEL = `refs-e2e-${run}`;
const WIDE = settings.clusterNamespace;
const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
const RBAC = join(__dirname, '..', '..', 'config', 'rbac', 'references');
const measured: Record<string, string> = {};

const modRule = (namespace: string, name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace },
  spec,
});
const labelsOf = (o: JsonObject) => ((o.metadata as JsonObject).labels ?? {}) as JsonObject;
const conditionOf = (rule: JsonObject, type: string) =>
  (((rule.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]).find((c) => c.type === type);
const items = async (client: KubeClient, path: string): Promise<JsonObject[]> =>
  ((await client.request('GET', path)).items ?? []) as JsonObject[];

describeCluster(`rules that read other objects (namespace ${NS})`, () => {
  let cp: E2eCluster | null = null;
  let admin: KubeClient;
  let ledger: ClusterLedger;
  let operator: RunningOperator | null = null;
  let saDir = '';

  /** Creates a ModRule and waits until it is Ready (the registration sends its objects). */
  async function ruleReady(rule: JsonObject): Promise<void> {
    const meta = rule.metadata as JsonObject;
    const ns = String(meta.namespace);
    await admin.request('POST', MODRULES(ns), { body: rule });
    ledger.track(`${MODRULES(ns)}/${String(meta.name)}`);
    await waitFor(`${ns}/${String(meta.name)} Ready`, async () => {
      const got = await admin.request('GET', `${MODRULES(ns)}/${String(meta.name)}`);
      return conditionOf(got, 'Ready')?.status === 'True';
    });
  }

  beforeAll(async () => {
    const started = Date.now();
    cp = await startCluster({ controllerManager: true });
    const kc = cp.kubeConfig();
    const host = cp.webhookHost;
    const port = await cp.webhookPort();
    admin = cp.admin();
    ledger = new ClusterLedger(admin);
    await installBundle(admin, ledger);
    // The opt-in RBAC for owners and ConfigMaps; Secrets stay off (no flag, no RBAC).
    for (const file of ['owners.yaml', 'configmaps.yaml'])
      for (const o of parseYamlDocuments(readFileSync(join(RBAC, file), 'utf8')) as JsonObject[])
        await ledger.apply(o);
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { [SCOPE_LABEL]: 'true' } },
    });
    await ledger.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: PLATFORM } });
    const { mutating, validating } = webhookManifests(`https://${host}:${port}`, SCOPE_LABEL);
    await ledger.apply(mutating);
    await ledger.apply(validating);
    ledger.track(`/api/v1/namespaces/${settings.clusterNamespace}/secrets/kubemod-webhook-server-cert`);
    let client = admin;
    if (settings.clusterNamespace === 'kubemod-system') {
      const sa = await serviceAccountClient(admin, kc, settings.clusterNamespace, 'kubemod-operator');
      saDir = sa.dir;
      client = sa.client;
    }
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
        // Roles are followed as owners too, but the operator may not read them: the "forbidden owner" case.
        references: { ownerKinds: [...DEFAULT_OWNER_KINDS, 'rbac.authorization.k8s.io/Role'] },
      },
      { client, logger: process.env.E2E_LOG ? createLogger('debug') : silentLogger() },
    );
    await waitFor('the operator to be ready', async () => operator?.isReady());
    measured['set-up'] = `${Date.now() - started} ms`;
  });

  afterAll(async () => {
    await operator?.stop();
    if (saDir) rmSync(saDir, { recursive: true, force: true });
    const problems = admin && ledger ? await ledger.restore() : [];
    await cp?.stop();
    process.stderr.write(
      `references e2e measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
    if (problems.length > 0) throw new Error(`the cluster is not as it was found:\n${problems.join('\n')}`);
  });

  it('a Deployment: its ReplicaSet and Pods carry the labels copied through syntheticRefs.owner, two levels', async () => {
    await ruleReady(
      modRule(NS, 'owner-team', {
        type: 'Patch',
        match: [{ select: '$.syntheticRefs.owner.metadata.labels.team' }],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/team',
            value: '{{ .Target.syntheticRefs.owner.metadata.labels.team }}',
          },
        ],
      }),
    );
    await ruleReady(
      modRule(NS, 'deployment-cost-centre', {
        type: 'Patch',
        match: [
          { select: '$.kind', matchValue: 'Pod' },
          { select: '$.syntheticRefs.owner.syntheticRefs.owner.metadata.labels["cost-centre"]' },
        ],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/cost-centre',
            value:
              '{{ index .Target.syntheticRefs.owner.syntheticRefs.owner.metadata.labels "cost-centre" }}',
          },
        ],
      }),
    );
    const started = Date.now();
    await admin.request('POST', `/apis/apps/v1/namespaces/${NS}/deployments`, {
      body: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', labels: { app: 'web', team: 'payments', 'cost-centre': 'cc-4711' } },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.example.com/web:1.0' }] },
          },
        },
      },
    });
    const [rs] = await waitFor('the ReplicaSet', async () => {
      const list = await items(admin, `/apis/apps/v1/namespaces/${NS}/replicasets`);
      return list.length > 0 ? list : undefined;
    });
    expect(labelsOf(rs)).toMatchObject({ app: 'web', team: 'payments' });
    const pods = await waitFor('two Pods', async () => {
      const list = await items(admin, `/api/v1/namespaces/${NS}/pods`);
      return list.length >= 2 ? list : undefined;
    });
    measured['Deployment to labelled Pods'] = `${Date.now() - started} ms`;
    for (const pod of pods)
      expect(labelsOf(pod)).toMatchObject({ app: 'web', team: 'payments', 'cost-centre': 'cc-4711' });
  });

  it("a CronJob's Job (kubectl create job --from=cronjob) carries the CronJob's label", async () => {
    const cron = await admin.request('POST', `/apis/batch/v1/namespaces/${NS}/cronjobs`, {
      body: {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: 'nightly', labels: { team: 'analytics' } },
        spec: {
          schedule: '0 2 * * *',
          jobTemplate: {
            spec: {
              template: {
                spec: { restartPolicy: 'OnFailure', containers: [{ name: 'r', image: 'busybox:1.36' }] },
              },
            },
          },
        },
      },
    });
    const meta = cron.metadata as JsonObject;
    // What `kubectl create job --from=cronjob/nightly` sends.
    const job = await admin.request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, {
      body: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: {
          name: 'nightly-manual',
          annotations: { 'cronjob.kubernetes.io/instantiate': 'manual' },
          ownerReferences: [
            {
              apiVersion: 'batch/v1',
              kind: 'CronJob',
              name: 'nightly',
              uid: meta.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: ((cron.spec as JsonObject).jobTemplate as JsonObject).spec as JsonObject,
      },
    });
    expect(labelsOf(job)).toMatchObject({ team: 'analytics' });
  });

  it('a central ConfigMap: an edit reaches the next object within 1 s; deleted, the rule sees it absent and says so', async () => {
    const central = `/api/v1/namespaces/${PLATFORM}/configmaps`;
    await admin.request('POST', central, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'registry-mirror' },
        data: { host: 'one.example.com' },
      },
    });
    await ruleReady(
      modRule(WIDE, `mirror-${run}`, {
        type: 'Patch',
        targetNamespaceRegex: `^${NS}$`,
        references: [
          {
            name: 'mirror',
            apiVersion: 'v1',
            kind: 'ConfigMap',
            namespace: PLATFORM,
            objectName: 'registry-mirror',
          },
        ],
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.syntheticRefs.mirror.data.host' },
        ],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/mirror',
            value: '{{ .Target.syntheticRefs.mirror.data.host }}',
          },
        ],
      }),
    );
    let n = 0;
    const created = async () =>
      admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${++n}` } },
      });
    expect(labelsOf(await created()).mirror).toBe('one.example.com');

    const current = await admin.request('GET', `${central}/registry-mirror`);
    await admin.request('PUT', `${central}/registry-mirror`, {
      body: { ...current, data: { host: 'two.example.com' } },
    });
    const edited = Date.now();
    await waitFor(
      'the new host on the next ConfigMap',
      async () => labelsOf(await created()).mirror === 'two.example.com',
      10_000,
      20,
    );
    const latency = Date.now() - edited;
    measured['ConfigMap edit to the next object'] = `${latency} ms`;
    expect(latency).toBeLessThan(1000);

    await remove(admin, `${central}/registry-mirror`);
    await waitFor(
      'no mirror label once the ConfigMap is gone',
      async () => labelsOf(await created()).mirror === undefined,
      10_000,
      50,
    );
    const rule = await waitFor('ReferenceMissing=True', async () => {
      const r = await admin.request('GET', `${MODRULES(WIDE)}/mirror-${run}`);
      return conditionOf(r, 'ReferenceMissing')?.status === 'True' ? r : undefined;
    });
    expect(conditionOf(rule, 'ReferenceMissing')).toMatchObject({
      reason: 'NotFound',
      message: `syntheticRefs.mirror: ConfigMap ${PLATFORM}/registry-mirror not found`,
    });
    expect(String(conditionOf(rule, 'Ready')?.message)).toContain('registry-mirror not found');
    await admin.request('POST', central, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'registry-mirror' },
        data: { host: 'three.example.com' },
      },
    });
    await waitFor('ReferenceMissing=False', async () => {
      const r = await admin.request('GET', `${MODRULES(WIDE)}/mirror-${run}`);
      return conditionOf(r, 'ReferenceMissing')?.status === 'False';
    });
  });

  it('refuses at admission a tenant rule naming another namespace, and a Secret without the flag, at the field', async () => {
    const refused = async (reference: JsonObject): Promise<KubeApiError> => {
      const rule = modRule(NS, `peek-${randomBytes(2).toString('hex')}`, {
        type: 'Patch',
        references: [{ name: 'x', apiVersion: 'v1', objectName: 'x', ...reference }],
        match: [{ select: '$.syntheticRefs.x' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }],
      });
      const err = await admin.request('POST', MODRULES(NS), { body: rule }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KubeApiError);
      return err as KubeApiError;
    };
    const other = await refused({ kind: 'ConfigMap', namespace: PLATFORM });
    expect(other.status).toBe(422);
    expect(other.message).toContain(
      `spec.references[0].namespace: Forbidden: a ModRule reads only objects of its own namespace (${NS})`,
    );
    const secret = await refused({ kind: 'Secret' });
    expect(secret.status).toBe(422);
    expect(secret.message).toContain('spec.references[0].kind: Forbidden: Secret references are off');
  });

  it('an owner of a kind the operator may not read: absent for the rule, its status says forbidden, nothing breaks', async () => {
    const role = await admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'owner', labels: { team: 'x' } },
        rules: [],
      },
    });
    const cm = await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'owned-by-role',
          ownerReferences: [
            {
              apiVersion: 'rbac.authorization.k8s.io/v1',
              kind: 'Role',
              name: 'owner',
              uid: (role.metadata as JsonObject).uid,
              controller: true,
            },
          ],
        },
      },
    });
    expect(labelsOf(cm).team).toBeUndefined();
    const rule = await waitFor('ReferenceMissing on owner-team', async () => {
      const r = await admin.request('GET', `${MODRULES(NS)}/owner-team`);
      return conditionOf(r, 'ReferenceMissing')?.status === 'True' ? r : undefined;
    });
    expect(conditionOf(rule, 'ReferenceMissing')).toMatchObject({
      reason: 'Unreadable',
      message: expect.stringMatching(/^syntheticRefs\.owner: .*roles.* is forbidden/),
    });
    expect(conditionOf(rule, 'Ready')?.status).toBe('True');
  });
});
