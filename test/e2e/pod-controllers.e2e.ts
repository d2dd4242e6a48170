import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { stringify } from 'yaml';
import { JsonObject } from '../../util/json';
import { createLogger, silentLogger } from '../../util/logger';
import { KubeClient } from '../../kube/kube';
import { markerAnnotation } from '../../rule/pod-controllers';
import { RunningOperator, startOperator } from '../../operator/start';
import { ClusterLedger, e2eSettings, waitFor, webhookManifests } from './cluster';
import { serviceAccountClient } from './credentials';
import { installBundle } from './install';
import { kubectl } from './kubectl';
import { describeCluster, E2eCluster, startCluster } from './target';

/*
 * spec.podControllers on a real 1.37 control plane with kube-controller-manager: one Pod rule (a sidecar appended at
 * /spec/containers/-, a label, and a Reject for containers without limits) reaches every controller kind. Each
 * controller is patched at its template's depth; the pods the controller-manager creates from a patched template
 * carry the sidecar once (the template's marker: the Pod rule leaves them alone); the pods of a controller created
 * before the rule are patched as pods; `kubectl apply` of a Deployment without limits is refused with the rule's
 * message; the rule's status lists the controllers it reaches. Own control plane or an existing cluster.
 */

const settings = e2eSettings();
const run = randomBytes(3).toString('hex');
const NS = `podctl-e2e-${run}`;
const SCOPE_LABEL = `podctl-e2e-${run}`;
const MODRULES = `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`;
const MARKER = markerAnnotation(NS, 'sidecar');
const measured: Record<string, string> = {};

const LIMITS = { limits: { memory: '64Mi', cpu: '100m' } };
const SIDECAR = 'log-agent';

const RULES: JsonObject[] = [
  {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'sidecar', namespace: NS },
    spec: {
      type: 'Patch',
      podControllers: ['*'],
      match: [
        { select: '$.kind', matchValue: 'Pod' },
        // The guard a pod needs (on 1.37 the ServiceAccount plugin mounts its token into the appended container,
        // and the webhook is invoked again: unguarded, the sidecar would be appended twice). Templates do not: their
        // marker keeps the rule off them, and off the pods made from them.
        { select: '$.spec.containers[*].name', matchValue: SIDECAR, negate: true },
      ],
      patch: [
        {
          op: 'add',
          path: '/spec/containers/-',
          value: `name: ${SIDECAR}\nimage: busybox:1.36\nresources: {limits: {memory: 32Mi, cpu: 50m}}`,
        },
        { op: 'add', path: '/metadata/labels/logging', value: '"{{ .Target.metadata.labels.app }}"' },
      ],
    },
  },
  {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'require-limits', namespace: NS },
    spec: {
      type: 'Reject',
      podControllers: ['*'],
      rejectMessage: 'every container needs resource limits ({{ .Target.metadata.labels.app }})',
      match: [
        { select: '$.kind', matchValue: 'Pod' },
        { select: '$.spec.containers[? isUndefined(@.resources.limits)]' },
      ],
    },
  },
];

const podTemplate = (app: string, extra: JsonObject = {}): JsonObject => ({
  metadata: { labels: { app } },
  spec: { containers: [{ name: app, image: 'registry.example.com/app:1.0', resources: LIMITS }], ...extra },
});

/** Every controller kind, its collection and a manifest; the template is where podControllers moves the rule. */
const CONTROLLERS: Array<{
  kind: string;
  path: string;
  body: JsonObject;
  template: (o: JsonObject) => JsonObject;
}> = [
  {
    kind: 'Deployment',
    path: `/apis/apps/v1/namespaces/${NS}/deployments`,
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: podTemplate('web') },
    },
    template: (o) => (o.spec as JsonObject).template as JsonObject,
  },
  {
    kind: 'StatefulSet',
    path: `/apis/apps/v1/namespaces/${NS}/statefulsets`,
    body: {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: {
        serviceName: 'db',
        replicas: 1,
        selector: { matchLabels: { app: 'db' } },
        template: podTemplate('db'),
      },
    },
    template: (o) => (o.spec as JsonObject).template as JsonObject,
  },
  {
    kind: 'DaemonSet',
    path: `/apis/apps/v1/namespaces/${NS}/daemonsets`,
    body: {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent' },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: podTemplate('agent') },
    },
    template: (o) => (o.spec as JsonObject).template as JsonObject,
  },
  {
    kind: 'ReplicaSet',
    path: `/apis/apps/v1/namespaces/${NS}/replicasets`,
    body: {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'cache' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'cache' } }, template: podTemplate('cache') },
    },
    template: (o) => (o.spec as JsonObject).template as JsonObject,
  },
  {
    kind: 'ReplicationController',
    path: `/api/v1/namespaces/${NS}/replicationcontrollers`,
    body: {
      apiVersion: 'v1',
      kind: 'ReplicationController',
      metadata: { name: 'legacy' },
      spec: { replicas: 1, selector: { app: 'legacy' }, template: podTemplate('legacy') },
    },
    template: (o) => (o.spec as JsonObject).template as JsonObject,
  },
  {
    kind: 'Job',
    path: `/apis/batch/v1/namespaces/${NS}/jobs`,
    body: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'migrate' },
      spec: { template: podTemplate('migrate', { restartPolicy: 'Never' }) },
    },
    template: (o) => (o.spec as JsonObject).template as JsonObject,
  },
  {
    kind: 'CronJob',
    path: `/apis/batch/v1/namespaces/${NS}/cronjobs`,
    body: {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'report' },
      spec: {
        schedule: '0 3 * * *',
        jobTemplate: { spec: { template: podTemplate('report', { restartPolicy: 'OnFailure' }) } },
      },
    },
    template: (o) =>
      (((o.spec as JsonObject).jobTemplate as JsonObject).spec as JsonObject).template as JsonObject,
  },
];

const containerNames = (podSpecHolder: JsonObject): string[] =>
  ((podSpecHolder.spec as JsonObject).containers as JsonObject[]).map((c) => String(c.name));
const metaOf = (o: JsonObject) => (o.metadata ?? {}) as JsonObject;
const items = async (client: KubeClient, path: string): Promise<JsonObject[]> =>
  ((await client.request('GET', path)).items ?? []) as JsonObject[];
const conditionOf = (rule: JsonObject, type: string) =>
  (((rule.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]).find((c) => c.type === type);

describeCluster(`spec.podControllers on the control plane's controllers (namespace ${NS})`, () => {
  let cp: E2eCluster | null = null;
  let admin: KubeClient;
  let ledger: ClusterLedger;
  let operator: RunningOperator | null = null;
  let saDir = '';
  let olderPod = '';

  /** The pods whose controller (owner) is named `owner`. */
  async function podsOf(owner: string, count: number): Promise<JsonObject[]> {
    return waitFor(`${count} pod(s) of ${owner}`, async () => {
      const pods = (await items(admin, `/api/v1/namespaces/${NS}/pods`)).filter((p) =>
        ((metaOf(p).ownerReferences ?? []) as JsonObject[]).some((r) =>
          owner.endsWith('-') ? String(r.name).startsWith(owner) : r.name === owner,
        ),
      );
      return pods.length >= count ? pods : undefined;
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
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { [SCOPE_LABEL]: 'true' } },
    });
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
      },
      { client, logger: process.env.E2E_LOG ? createLogger('debug') : silentLogger() },
    );
    await waitFor('the operator to be ready', async () => operator?.isReady());
    // Pods need their namespace's ServiceAccount (the token controller may be slower than the first pod).
    await waitFor('the default ServiceAccount', async () =>
      admin.request('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`).then(
        () => true,
        () => false,
      ),
    );
    // A Deployment from before the rules: its ReplicaSet's template has no marker.
    await admin.request('POST', `/apis/apps/v1/namespaces/${NS}/deployments`, {
      body: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'older' },
        spec: { replicas: 1, selector: { matchLabels: { app: 'older' } }, template: podTemplate('older') },
      },
    });
    const [before] = await podsOf('older-', 1);
    olderPod = String(metaOf(before).name);
    for (const rule of RULES) {
      await admin.request('POST', MODRULES, { body: rule });
      ledger.track(`${MODRULES}/${String(metaOf(rule).name)}`);
    }
    for (const rule of RULES)
      await waitFor(`${String(metaOf(rule).name)} Ready`, async () => {
        const got = await admin.request('GET', `${MODRULES}/${String(metaOf(rule).name)}`);
        return conditionOf(got, 'Ready')?.status === 'True';
      });
    measured['set-up'] = `${Date.now() - started} ms`;
  });

  afterAll(async () => {
    await operator?.stop();
    if (saDir) rmSync(saDir, { recursive: true, force: true });
    if (admin) await admin.request('DELETE', `/api/v1/namespaces/${NS}`).catch(() => undefined);
    const problems = admin && ledger ? await ledger.restore() : [];
    await cp?.stop();
    process.stderr.write(
      `pod-controllers e2e measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
    if (problems.length > 0) throw new Error(`the cluster is not as it was found:\n${problems.join('\n')}`);
  });

  it.each(CONTROLLERS.map((c) => [c.kind, c] as const))(
    "patches a %s at its template, and says so on the rule's status",
    async (_kind, c) => {
      const stored = await admin.request('POST', c.path, { body: c.body });
      const template = c.template(stored);
      expect(containerNames(template)).toEqual([String(metaOf(c.body).name), SIDECAR]);
      expect(metaOf(template).labels).toMatchObject({ logging: String(metaOf(c.body).name) });
      expect(metaOf(template).annotations).toMatchObject({ [MARKER]: `${NS}/sidecar` });
      // The controller's own metadata is the controller's: nothing landed there.
      expect(metaOf(stored).labels ?? {}).not.toHaveProperty('logging');
    },
  );

  it('the pods the controller-manager creates from patched templates carry the sidecar once', async () => {
    const started = Date.now();
    const owners: Array<[string, number]> = [
      ['web-', 2],
      ['db', 1],
      ['cache', 1],
      ['legacy', 1],
      ['migrate', 1],
    ];
    for (const [owner, count] of owners) {
      const pods = await podsOf(owner, count);
      for (const pod of pods) {
        expect(containerNames(pod).filter((n) => n === SIDECAR)).toHaveLength(1);
        expect(metaOf(pod).annotations).toMatchObject({ [MARKER]: `${NS}/sidecar` });
      }
    }
    // A CronJob's Job (as kubectl create job --from=cronjob makes it) and its pod.
    const cron = await admin.request('GET', `/apis/batch/v1/namespaces/${NS}/cronjobs/report`);
    const jobTemplate = (cron.spec as JsonObject).jobTemplate as JsonObject;
    const job = await admin.request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, {
      body: {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: {
          name: 'report-manual',
          ownerReferences: [
            {
              apiVersion: 'batch/v1',
              kind: 'CronJob',
              name: 'report',
              uid: String(metaOf(cron).uid),
              controller: true,
            },
          ],
        },
        spec: jobTemplate.spec as JsonObject,
      },
    });
    expect(containerNames((job.spec as JsonObject).template as JsonObject)).toEqual(['report', SIDECAR]);
    const [pod] = await podsOf('report-manual', 1);
    expect(containerNames(pod)).toEqual(['report', SIDECAR]);
    measured['controllers to pods with one sidecar'] = `${Date.now() - started} ms`;
  });

  it('patches the pods of a controller created before the rule, and a bare pod, as pods', async () => {
    // The older Deployment's pod goes: its ReplicaSet (template without marker) makes a new one, a pod to patch.
    await admin.request('DELETE', `/api/v1/namespaces/${NS}/pods/${olderPod}`, {
      query: { gracePeriodSeconds: '0' },
    });
    const [rs] = (await items(admin, `/apis/apps/v1/namespaces/${NS}/replicasets`)).filter((r) =>
      String(metaOf(r).name).startsWith('older-'),
    );
    // A ReplicaSet a Deployment controls is the Deployment's: left as it was.
    expect(containerNames((rs.spec as JsonObject).template as JsonObject)).toEqual(['older']);
    const pod = await waitFor('a new pod of the older ReplicaSet', async () => {
      const pods = await podsOf(String(metaOf(rs).name), 1);
      return pods.find((p) => metaOf(p).name !== olderPod);
    }).catch(async (err: unknown) => {
      // Why not: the ReplicaSet's events (a refused create says so there).
      const events = (await items(admin, `/api/v1/namespaces/${NS}/events`)).map(
        (e) => `${String((e.involvedObject as JsonObject).name)}: ${String(e.reason)}: ${String(e.message)}`,
      );
      throw new Error(`${String(err)}\n${events.join('\n')}`);
    });
    expect(containerNames(pod)).toEqual(['older', SIDECAR]);
    expect(metaOf(pod).labels).toMatchObject({ logging: 'older' });
    const bare = await admin.request('POST', `/api/v1/namespaces/${NS}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'bare', labels: { app: 'bare' } },
        spec: podTemplate('bare').spec as JsonObject,
      },
    });
    expect(containerNames(bare)).toEqual(['bare', SIDECAR]);
  });

  it("refuses `kubectl apply` of a Deployment without limits, with the rule's message", async () => {
    const bin = cp?.kubectl;
    if (!bin || !cp) throw new Error('kubectl is needed (KUBEBUILDER_ASSETS or E2E_KUBECTL)');
    const manifest = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'unlimited', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'unlimited' } },
        template: {
          metadata: { labels: { app: 'unlimited' } },
          spec: { containers: [{ name: 'app', image: 'registry.example.com/app:1.0' }] },
        },
      },
    };
    const r = await kubectl(bin, cp.kubeConfigPath, ['apply', '-f', '-'], stringify(manifest));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `operation rejected by the following ModRule(s): ${NS}/require-limits: "every container needs resource limits (unlimited)"`,
    );
    const listed = await items(admin, `/apis/apps/v1/namespaces/${NS}/deployments`);
    expect(listed.map((d) => metaOf(d).name)).not.toContain('unlimited');
  });

  it('warns on `kubectl apply` of the rule without its guard (not idempotent on a pod)', async () => {
    const bin = cp?.kubectl;
    if (!bin || !cp) throw new Error('kubectl is needed (KUBEBUILDER_ASSETS or E2E_KUBECTL)');
    const spec = RULES[0].spec as JsonObject;
    const unguarded = {
      ...RULES[0],
      metadata: { name: 'sidecar-unguarded', namespace: NS },
      spec: { ...spec, match: [(spec.match as JsonObject[])[0]] },
    };
    const r = await kubectl(
      bin,
      cp.kubeConfigPath,
      ['apply', '--dry-run=server', '-f', '-'],
      stringify(unguarded),
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      'Warning: spec.patch: not idempotent: applied to its own result it changes /spec/containers/5 again (sample Pod web-x2x5k)',
    );
  });

  it("refuses `kubectl apply` of a Pod rule a template cannot answer (the pod's name), at the field", async () => {
    const bin = cp?.kubectl;
    if (!bin || !cp) throw new Error('kubectl is needed (KUBEBUILDER_ASSETS or E2E_KUBECTL)');
    const spec = RULES[0].spec as JsonObject;
    const byName = {
      ...RULES[0],
      metadata: { name: 'sidecar-by-name', namespace: NS },
      spec: {
        ...spec,
        match: [...(spec.match as JsonObject[]), { select: '$.metadata.name', matchRegex: '^web' }],
      },
    };
    const r = await kubectl(bin, cp.kubeConfigPath, ['apply', '-f', '-'], stringify(byName));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`spec.match[${(spec.match as JsonObject[]).length}].select: `);
    expect(r.stderr).toContain("metadata.name is the pod's own");
    const listed = await items(admin, `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`);
    expect(listed.map((d) => metaOf(d).name)).not.toContain('sidecar-by-name');
  });

  it("lists the controllers it reaches on the rule's status", async () => {
    const got = await waitFor('status.podControllers', async () => {
      const rule = await admin.request('GET', `${MODRULES}/sidecar`);
      return Array.isArray((rule.status as JsonObject | undefined)?.podControllers) ? rule : undefined;
    });
    expect((got.status as JsonObject).podControllers).toEqual([
      'Deployment',
      'StatefulSet',
      'DaemonSet',
      'ReplicaSet',
      'Job',
      'CronJob',
      'ReplicationController',
    ]);
  });
});
