import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { stringifyManifests } from '../../util/yaml';
import { InClusterAccess } from '../../kube/incluster';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { RunningOperator, startOperator } from '../../operator/start';
import { run as applyCommand } from '../../cli/apply';
import { runAudit } from '../../cli/audit';
import { runCommand } from '../../cli/testing';
import { runProcess } from '../cli';
import { auditRules, blockerRule, configMap, COUNT, deployment } from './audit-fixtures';
import { bundleObjects, ClusterLedger, e2eSettings, remove, waitFor, webhookManifests } from './cluster';
import { freePort } from './controlplane';
import { tokenKubeConfig } from './credentials';
import { describeCluster, E2eCluster, startCluster } from './target';

/*
 * `modrule audit` and the operator's background reports against a real API server (target.ts: its own control
 * plane, or an existing cluster): a namespace with 200 Deployments and 200 ConfigMaps that exist before any
 * rule, then rules added. The operator runs in this process with the bundle's ServiceAccount (plus
 * config/reports/openreports), its webhooks called by URL, so every write of `audit --apply` passes through it.
 */

const settings = e2eSettings();
const run = randomBytes(3).toString('hex');
const NS = `audit-e2e-${run}`;
const SCOPE_LABEL = `modrule-e2e-${run}`;
const CLUSTER_NS = settings.clusterNamespace;
const ROOT = join(__dirname, '..', '..');
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;
const CONFIGMAPS = `/api/v1/namespaces/${NS}/configmaps`;
const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
const REPORT = `/apis/openreports.io/v1alpha1/namespaces/${NS}/reports/modrule-audit`;
const CLUSTER_REPORT = '/apis/openreports.io/v1alpha1/clusterreports/modrule-audit';
const measured: Record<string, string> = {};

function yamlFile(relative: string): JsonObject[] {
  return parseAllDocuments(readFileSync(join(ROOT, relative), 'utf8'))
    .map((d) => d.toJS() as unknown)
    .filter(isJsonObject);
}

/** What `modrule audit` printed and returned, run in this process with a given client. */
const audit = (client: KubeClient, args: string[]) =>
  runCommand((a, io) => runAudit(a, io, { client }), args);

interface AuditJson {
  objects: Array<{ kind: string; namespace: string | null; name: string; verdict: string; patch: unknown[] }>;
  summary: {
    verdicts: Record<string, number>;
    applied?: Record<string, number>;
    conflicts?: number;
    complete: boolean;
  };
}

const key = (kind: string, ns: string | null, name: string) => `${kind}/${ns ?? ''}/${name}`;
const meta = (o: JsonObject) => o.metadata as JsonObject;

async function inParallel<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

async function listItems(
  client: KubeClient,
  path: string,
  apiVersion: string,
  kind: string,
): Promise<JsonObject[]> {
  const list = await client.request('GET', path);
  return (list.items as JsonObject[]).map((o) => ({ apiVersion, kind, ...o }));
}

/** A client that, the first time a real (not dry-run) PATCH goes to `path`, lets `meanwhile` change the object. */
function racingClient(client: KubeClient, path: string, meanwhile: () => Promise<unknown>): KubeClient {
  let raced = false;
  return {
    request: async (method, p, options) => {
      if (!raced && method === 'PATCH' && p === path && options?.query?.dryRun === undefined) {
        raced = true;
        await meanwhile();
      }
      return client.request(method, p, options);
    },
    watch: (p, q, on) => client.watch(p, q, on),
  };
}

describeCluster(`modrule audit and background reports against a real API server (namespace ${NS})`, () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let operatorClient: KubeClient;
  let ledger: ClusterLedger;
  let operator: RunningOperator | null = null;
  let dir = '';
  let rulesFile = '';
  let firstAudit: AuditJson;
  /** 1 when a controller-manager put kube-root-ca.crt into the namespace, else 0. */
  let system = 0;

  beforeAll(async () => {
    const started = Date.now();
    cp = await startCluster();
    admin = createKubeClient(kubeConfigAccess(cp.kubeConfig()));
    ledger = new ClusterLedger(admin);
    dir = mkdtempSync(join(tmpdir(), 'modrule-audit-e2e-'));
    const reports = [
      ...yamlFile('config/reports/openreports/crds.yaml'),
      ...yamlFile('config/reports/wgpolicyk8s/crds.yaml'),
      ...yamlFile('config/reports/audit-rbac/cluster_role.yaml'),
      ...yamlFile('config/reports/audit-rbac/cluster_role_binding.yaml'),
      ...yamlFile('config/reports/openreports/reports_role.yaml'),
    ];
    for (const obj of [...bundleObjects(), ...reports]) {
      if (obj.kind === 'MutatingWebhookConfiguration' || obj.kind === 'ValidatingWebhookConfiguration')
        continue;
      await ledger.apply(obj);
    }
    for (const crd of [
      'modrules.api.kubemod.io',
      'reports.openreports.io',
      'clusterreports.openreports.io',
    ]) {
      await waitFor(`the CRD ${crd} to be established`, async () => {
        const got = await admin.request(
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`,
        );
        const conditions = ((got.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
        return conditions.some((c) => c.type === 'Established' && c.status === 'True');
      });
    }
    // Established is not yet served when a CRD of that name was deleted a moment before (the suite before).
    await waitFor('ModRules to be served', async () => {
      await admin.request('GET', '/apis/api.kubemod.io/v1beta1/modrules', { query: { limit: 1 } });
      return true;
    });
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { [SCOPE_LABEL]: 'true', owner: 'shop-team' } },
    });
    const webhookUrl = `https://${cp.webhookHost}:${await freePort()}`;
    const { mutating, validating } = webhookManifests(webhookUrl, SCOPE_LABEL);
    await ledger.apply(mutating);
    await ledger.apply(validating);

    // The operator as the bundle runs it (its ServiceAccount, RBAC from config/), with reports on.
    const token = await admin.request(
      'POST',
      `/api/v1/namespaces/${CLUSTER_NS}/serviceaccounts/kubemod-operator/token`,
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 3600 },
        },
      },
    );
    writeFileSync(join(dir, 'token'), String((token.status as JsonObject).token), { mode: 0o600 });
    writeFileSync(join(dir, 'ca.crt'), cp.caCert() ?? '');
    operatorClient = createKubeClient(new InClusterAccess(cp.server, { dir }));
    operator = await startOperator(
      {
        clusterNamespace: CLUSTER_NS,
        podNamespace: CLUSTER_NS,
        webhookPort: Number(new URL(webhookUrl).port),
        healthPort: 0,
        host: cp.listenHost,
        certMode: 'self',
        certDir: '',
        extraHosts: [cp.webhookHost],
        writeStatus: false,
        reports: { format: 'openreports', intervalSeconds: 4, debounceMs: 300, pageSize: 50, qps: 100 },
      },
      { client: operatorClient, logger: silentLogger() },
    );
    await waitFor('the operator to be ready', async () => operator?.isReady());

    // The namespace fills up before any rule exists.
    const t0 = Date.now();
    await inParallel(
      Array.from({ length: COUNT }, (_, i) => i),
      16,
      async (i) => {
        await admin.request('POST', DEPLOYMENTS, { body: deployment(NS, i) });
        await admin.request('POST', CONFIGMAPS, { body: configMap(NS, i) });
      },
    );
    measured[`${COUNT} Deployments + ${COUNT} ConfigMaps created`] = `${Date.now() - t0} ms`;
    // Then the rules (the ModRule webhooks must answer first: caBundle set by the operator).
    const rules = auditRules(NS, CLUSTER_NS, SCOPE_LABEL);
    rulesFile = join(dir, 'rules.yaml');
    writeFileSync(rulesFile, stringifyManifests(rules));
    for (const rule of [...rules, blockerRule(NS)]) {
      await waitFor('the ModRule webhooks', async () => {
        await ledger.apply(rule);
        return true;
      });
    }
    await waitFor('the operator to hold the rules', async () => operator!.store.snapshot().ruleCount === 5);
    // A cluster's controller-manager puts its CA in every namespace (the ConfigMap kube-root-ca.crt, one more the
    // ConfigMap rule patches) and writes the Deployments' status: wait until they stop changing.
    system = await admin.request('GET', `${CONFIGMAPS}/kube-root-ca.crt`).then(
      () => 1,
      () => 0,
    );
    let versions = '';
    await waitFor(
      'the Deployments to stop changing',
      async () => {
        const now = (await listItems(admin, DEPLOYMENTS, 'apps/v1', 'Deployment'))
          .map((d) => meta(d).resourceVersion)
          .join();
        const same = now === versions;
        versions = now;
        return same;
      },
      60_000,
      2000,
    );
    measured['set-up'] = `${Date.now() - started} ms`;
  });

  afterAll(async () => {
    let t = Date.now();
    await operator?.stop();
    measured['operator stop'] = `${Date.now() - t} ms`;
    t = Date.now();
    const problems = ledger ? await ledger.restore() : [];
    measured['cluster restored'] = `${Date.now() - t} ms`;
    t = Date.now();
    await cp?.stop();
    measured['control plane stop'] = `${Date.now() - t} ms`;
    if (dir) rmSync(dir, { recursive: true, force: true });
    process.stderr.write(
      `audit e2e measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
    if (problems.length > 0) throw new Error(problems.join('\n'));
  });

  it('reports exactly what `modrule apply` offline says the webhook would do to the same objects', async () => {
    const t0 = Date.now();
    const out = await audit(admin, ['-o', 'json', '--page-size', '64']);
    measured['audit of 400 objects (json)'] = `${Date.now() - t0} ms`;
    expect(out.code).toBe(2);
    firstAudit = JSON.parse(out.stdout) as AuditJson;

    // Offline: the same objects, the same rules, the namespace manifest for syntheticRefs.
    const objects = [
      ...(await listItems(admin, DEPLOYMENTS, 'apps/v1', 'Deployment')),
      ...(await listItems(admin, CONFIGMAPS, 'v1', 'ConfigMap')),
      { apiVersion: 'v1', kind: 'Namespace', ...(await admin.request('GET', `/api/v1/namespaces/${NS}`)) },
    ];
    const objectsFile = join(dir, 'objects.json');
    writeFileSync(objectsFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    const clusterFile = join(dir, 'cluster.json');
    writeFileSync(clusterFile, JSON.stringify(objects[objects.length - 1]));
    const allRules = join(dir, 'all-rules.yaml');
    writeFileSync(
      allRules,
      stringifyManifests([...auditRules(NS, CLUSTER_NS, SCOPE_LABEL), blockerRule(NS)]),
    );
    const offline = await runCommand(applyCommand, [
      '--rules',
      allRules,
      '--file',
      objectsFile,
      '--old',
      objectsFile,
      '--operation',
      'UPDATE',
      '--cluster',
      clusterFile,
      '--output',
      'json',
    ]);
    const verdicts = JSON.parse(offline.stdout) as Array<JsonObject & { patch: unknown[] }>;
    const expected = new Map<string, unknown>();
    for (const v of verdicts) {
      const k = key(String(v.kind), v.namespace as string | null, String(v.name));
      if (!v.allowed) expected.set(k, 'reject');
      else if (v.patch.length > 0) expected.set(k, v.patch);
    }
    const got = new Map<string, unknown>();
    for (const o of firstAudit.objects) {
      if (o.verdict === 'reject') got.set(key(o.kind, o.namespace, o.name), 'reject');
      else if (o.verdict === 'patch') got.set(key(o.kind, o.namespace, o.name), o.patch);
    }
    expect(got).toEqual(expected);
    // Deployments: 100 without a team, 14 of them rejected (10 :latest, 4 blocked); ConfigMaps: 150 without the
    // owner annotation; the Namespace.
    expect(firstAudit.summary.verdicts).toEqual({
      patch: 86 + 150 + 1 + system,
      reject: 14,
      error: 0,
      pass: 100 + 50,
    });
    expect(firstAudit.summary.complete).toBe(true);
  });

  it('--apply --dry-run sends only server-side dry runs and shows exactly what it would send', async () => {
    const before = await listItems(admin, DEPLOYMENTS, 'apps/v1', 'Deployment');
    const out = await audit(admin, ['--apply', '--dry-run', '-n', NS, '-l', 'app=web-001']);
    expect(out.code).toBe(2);
    expect(out.stdout).toContain(`PATCH ${DEPLOYMENTS}/web-001?fieldManager=modrule`);
    expect(out.stdout).toContain('Content-Type: application/json-patch+json');
    const rv = meta(before.find((d) => meta(d).name === 'web-001')!).resourceVersion;
    expect(out.stdout).toContain(
      `[{"op":"test","path":"/metadata/resourceVersion","value":"${rv}"},{"op":"add","path":"/metadata/labels/team","value":"platform"}`,
    );
    const after = await listItems(admin, DEPLOYMENTS, 'apps/v1', 'Deployment');
    expect(after.map((d) => meta(d).resourceVersion)).toEqual(before.map((d) => meta(d).resourceVersion));
  });

  it('runs as a command with a kubeconfig, and reports a list RBAC forbids as partial', async () => {
    // A user who may list Deployments in the namespace, and nothing else.
    const sa = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'auditor', namespace: NS } };
    await ledger.apply(sa);
    await ledger.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'auditor', namespace: NS },
      rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list'] }],
    });
    await ledger.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'auditor', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'auditor' },
      subjects: [{ kind: 'ServiceAccount', name: 'auditor', namespace: NS }],
    });
    const token = await admin.request('POST', `/api/v1/namespaces/${NS}/serviceaccounts/auditor/token`, {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    });
    const kubeconfig = join(dir, 'auditor.kubeconfig');
    // The cluster and its CA as the admin's kubeconfig has them, the auditor's token as the user.
    const auditorToken = String((token.status as JsonObject).token);
    writeFileSync(kubeconfig, tokenKubeConfig(cp.server, cp.caCert() ?? '', 'auditor', auditorToken));
    const out = await runProcess('modrule', ['audit', '--rules', rulesFile, '-n', NS, '-o', 'json'], {
      env: { KUBECONFIG: kubeconfig },
    });
    expect(out.code).toBe(1);
    const result = JSON.parse(out.stdout) as AuditJson & { summary: { problems: string[] } };
    expect(result.summary.complete).toBe(false);
    expect(result.summary.problems).toEqual([
      expect.stringMatching(
        new RegExp(`^forbidden: cannot list configmaps in namespace ${NS}: 403 Forbidden`),
      ),
    ]);
    // What it could list is there: the Deployments.
    expect(result.summary.verdicts.patch).toBe(86 + 4);
    expect(out.stderr).toContain(`cannot read Namespace ${NS}`);
  });

  it('is read-only with the operator`s ServiceAccount, which may list but not patch', async () => {
    const can = async (verb: string) => {
      const review = await operatorClient.request(
        'POST',
        '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
        {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: { verb, group: 'apps', resource: 'deployments', namespace: NS } },
          },
        },
      );
      return (review.status as JsonObject).allowed === true;
    };
    expect(await can('list')).toBe(true);
    expect(await can('patch')).toBe(false);
    const out = await audit(operatorClient, ['--apply', '-n', NS, '-l', 'app=web-001', '-o', 'json']);
    const result = JSON.parse(out.stdout) as AuditJson;
    expect(result.summary.applied).toMatchObject({ patched: 0, failed: 1 });
    expect(out.stdout).toMatch(/forbidden/i);
  });

  it('--apply brings every object in line through the webhook, retrying a concurrent update, then finds nothing', async () => {
    const raced = `${DEPLOYMENTS}/web-005`;
    // A status write (as a controller makes): the object changes, and the dragnet (no subresources) does not see it.
    const client = racingClient(admin, raced, async () => {
      const d = await admin.request('GET', raced);
      d.status = { observedGeneration: 1, replicas: 0 };
      await admin.request('PUT', `${raced}/status`, { body: d });
    });
    const t0 = Date.now();
    const out = await audit(client, [
      '--apply',
      '--rules',
      rulesFile,
      '-o',
      'json',
      '--qps',
      '500',
      '--concurrency',
      '8',
    ]);
    measured['audit --apply of 400 objects'] = `${Date.now() - t0} ms`;
    const result = JSON.parse(out.stdout) as AuditJson;
    // The 4 blocked Deployments: the file's rules would patch them, the webhook's dry run refuses.
    expect(result.summary.applied).toEqual({
      patched: 237 + system,
      'dry-run': 0,
      'in-line': 0,
      rejected: 10,
      gone: 0,
      failed: 4,
    });
    // One conflict, the raced write; a cluster's deployment controller answering that status write with its own can
    // make a second (its own control plane runs no controllers).
    if (cp.own) expect(result.summary.conflicts).toBe(1);
    else expect(result.summary.conflicts).toBeGreaterThanOrEqual(1);
    expect(out.stdout).toContain('blocked by policy');
    const web5 = await admin.request('GET', raced);
    expect(meta(web5).labels).toMatchObject({ team: 'platform' });
    // The raced status write kept (a cluster's deployment controller writes its own status after the patch).
    if (cp.own) expect(web5.status).toMatchObject({ observedGeneration: 1 });
    expect((meta(web5).managedFields as JsonObject[]).map((f) => f.manager)).toContain('modrule');

    const again = JSON.parse((await audit(admin, ['-o', 'json'])).stdout) as AuditJson;
    expect(again.summary.verdicts).toMatchObject({ patch: 0, reject: 14, error: 0 });
  });

  it('keeps reports per namespace and for the cluster that follow rule edits and object deletions', async () => {
    const report = () => admin.request('GET', REPORT);
    const results = (r: JsonObject) => r.results as JsonObject[];
    const about = (r: JsonObject, name: string) =>
      results(r).filter((x) => ((x.resources as JsonObject[])[0].name as string) === name);
    // After --apply only the 14 rejected Deployments fail, twice each: the Reject rule, and team-label that would
    // patch them. 800 results: 3 rules reach each Deployment, 1 each ConfigMap.
    const settled = await waitFor(
      'the report to show the objects in line',
      async () => {
        const r = await report().catch(() => undefined);
        return r && (r.summary as JsonObject).fail === 28 ? r : undefined;
      },
      60_000,
    );
    expect(settled).toMatchObject({
      source: 'modrule',
      metadata: { labels: { 'app.kubernetes.io/managed-by': 'modrule' } },
    });
    expect(settled.summary).toEqual({ pass: 800 - 28 + system, fail: 28, warn: 0, error: 0, skip: 0 });
    expect(about(settled, 'web-003')).toContainEqual(
      expect.objectContaining({
        policy: `${CLUSTER_NS}/audit-no-latest-${NS}`,
        result: 'fail',
        message: 'would be rejected: web-003: pin the image',
      }),
    );
    const clusterReport = await admin.request('GET', CLUSTER_REPORT);
    expect(clusterReport.summary).toMatchObject({ pass: 1, fail: 0 });

    // A rule edit: ConfigMaps must now say owner=platform; every ConfigMap fails until brought in line.
    const edited = auditRules(NS, CLUSTER_NS, SCOPE_LABEL)[1];
    ((edited.spec as JsonObject).patch as JsonObject[])[0].value = 'platform';
    await ledger.apply(edited);
    const t0 = Date.now();
    await waitFor(
      'the report to follow the rule edit',
      async () => {
        const r = await report();
        return (r.summary as JsonObject).fail === 28 + COUNT + system;
      },
      60_000,
    );
    measured['report follows a rule edit'] = `${Date.now() - t0} ms`;
    // An object deleted: its results go at the next scan.
    await remove(admin, `${DEPLOYMENTS}/web-003`);
    await waitFor(
      'the report to forget a deleted Deployment',
      async () => about(await report(), 'web-003').length === 0,
      60_000,
    );
    // Rules deleted: the namespace has nothing to report, its report goes.
    for (const rule of [...auditRules(NS, CLUSTER_NS, SCOPE_LABEL), blockerRule(NS)]) {
      await remove(admin, `${MODRULES(meta(rule).namespace as string)}/${meta(rule).name as string}`);
    }
    await waitFor(
      'the reports to be deleted',
      async () => {
        const gone = await report().then(
          () => false,
          () => true,
        );
        const clusterGone = await admin.request('GET', CLUSTER_REPORT).then(
          () => false,
          () => true,
        );
        return gone && clusterGone;
      },
      60_000,
    );
  });

  it('writes reports the cluster accepts in both formats (`audit -o report`)', async () => {
    for (const format of ['openreports', 'wgpolicyk8s']) {
      const out = await audit(admin, [
        '-o',
        'report',
        '--report-format',
        format,
        '-n',
        NS,
        '--rules',
        rulesFile,
      ]);
      const docs = parseAllDocuments(out.stdout).map((d) => d.toJS() as JsonObject);
      expect(docs.map((d) => d.kind)).toEqual([format === 'openreports' ? 'Report' : 'PolicyReport']);
      const [group, version] = String(docs[0].apiVersion).split('/');
      const plural = format === 'openreports' ? 'reports' : 'policyreports';
      const path = `/apis/${group}/${version}/namespaces/${NS}/${plural}`;
      const created = await admin.request('POST', path, {
        body: { ...docs[0], metadata: { ...meta(docs[0]), name: `cli-${format}` } },
      });
      expect(created.results).toEqual(docs[0].results);
      ledger.track(`${path}/cli-${format}`);
    }
  });
});
