import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { InClusterAccess } from '../../kube/incluster';
import { createKubeClient, KubeApiError, KubeClient } from '../../kube/kube';
import { RunningOperator, startOperator } from '../../operator/start';
import { concreteQuery, dashboardQueries, pendingMetricsOf } from '../monitoring';
import { prometheusTool } from '../prometheus';
import { bundleObjects, ClusterLedger, e2eSettings, webhookManifests, waitFor } from './cluster';
import { apiServerJob, fastAlerts, PrometheusServer, serviceMonitorJob } from './prometheus';
import { configMap, gateModRuleList, onLabel, rule, yamlFile } from './monitoring-fixtures';
import { describeCluster, E2eCluster, startCluster } from './target';

/*
 * The dashboard and alerts of config/monitoring against a real Prometheus server (Debian's package) scraping the
 * operator as the ServiceMonitor would, and the API server's own metrics, on a real Kubernetes 1.37 API server. A
 * replica that cannot load its rules answers fail-open, a ModRule fails at run time, heavy rules get quarantined:
 * the alerts fire and resolve, and every query of the dashboard parses and returns series. Prometheus runs on this
 * machine beside the operator: a control plane of its own or an existing cluster (target.ts) both do.
 */

const prometheusBin = prometheusTool('prometheus');
const describeMonitoring = prometheusBin ? describeCluster : describe.skip;
const settings = e2eSettings();
const run = randomBytes(3).toString('hex');
const NS = `monitoring-e2e-${run}`;
const HEAVY_NS = `monitoring-heavy-${run}`;
const SCOPE_LABEL = `modrule-e2e-${run}`;
const CLUSTER_NS = settings.clusterNamespace;
const ROOT = join(__dirname, '..', '..');
const CONFIGMAPS = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;
/** The dragnet's timeout in this run: a replica without its rules holds a request 1 s less, then answers 503. */
const DRAGNET_TIMEOUT_SECONDS = 3;
const measured: Record<string, string> = {};

describeMonitoring(`monitoring: the alerts and the dashboard on a live Prometheus (namespace ${NS})`, () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let ledger: ClusterLedger;
  let operator: RunningOperator | null = null;
  let prometheus: PrometheusServer | null = null;
  let release: () => void = () => undefined;
  let dir = '';
  let failOpenAt = 0;

  const firing = async (alertname: string, labels: Record<string, string> = {}) =>
    (await prometheus!.alerts()).some(
      (a) =>
        a.labels.alertname === alertname &&
        a.state === 'firing' &&
        Object.entries(labels).every(([k, v]) => a.labels[k] === v),
    );

  beforeAll(async () => {
    const started = Date.now();
    cp = await startCluster();
    admin = cp.admin();
    ledger = new ClusterLedger(admin);
    dir = mkdtempSync(join(tmpdir(), 'modrule-monitoring-e2e-'));
    const reports = [
      ...yamlFile('config/reports/openreports/crds.yaml'),
      ...yamlFile('config/reports/audit-rbac/cluster_role.yaml'),
      ...yamlFile('config/reports/audit-rbac/cluster_role_binding.yaml'),
      ...yamlFile('config/reports/openreports/reports_role.yaml'),
    ];
    for (const obj of [...bundleObjects(), ...reports])
      if (!/WebhookConfiguration$/.test(String(obj.kind))) await ledger.apply(obj);
    for (const ns of [NS, HEAVY_NS])
      await ledger.apply({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { [SCOPE_LABEL]: 'true' } },
      });
    const webhookUrl = `https://${cp.webhookHost}:${await cp.webhookPort()}`;
    const { mutating, validating } = webhookManifests(webhookUrl, SCOPE_LABEL);
    for (const hook of mutating.webhooks as JsonObject[])
      if (hook.name === 'dragnet.kubemod.io') hook.timeoutSeconds = DRAGNET_TIMEOUT_SECONDS;
    await ledger.apply(mutating);
    await ledger.apply(validating);
    for (const crd of ['modrules.api.kubemod.io', 'reports.openreports.io'])
      await waitFor(`the CRD ${crd}`, async () => {
        const got = await admin.request(
          'GET',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`,
        );
        return (((got.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]).some(
          (c) => c.type === 'Established' && c.status === 'True',
        );
      });

    // The operator as the bundle runs it (its ServiceAccount), reports on; its first list of ModRules waits for
    // release(): until then it has no rules to answer with.
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
    const gate = gateModRuleList(createKubeClient(new InClusterAccess(cp.server, { dir })));
    release = gate.release;
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
        // Steps only (a rule's share: 20,000), so which rules run out does not depend on the machine.
        budget: { steps: 200_000, ms: 30_000 },
        reports: { format: 'openreports', intervalSeconds: 5, debounceMs: 300, qps: 100 },
      },
      { client: gate.client, logger: silentLogger() },
    );

    // Prometheus: the operator as the ServiceMonitor scrapes it, and the API server as kube-prometheus-stack does.
    prometheus = await PrometheusServer.start(
      prometheusBin!,
      dir,
      [serviceMonitorJob(operator.webhook.healthPort, 'kubemod-operator-e2e'), apiServerJob(cp, dir)],
      fastAlerts(2),
    );
    await waitFor('the CA in the webhook configurations', async () => {
      const got = await admin.request(
        'GET',
        '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration',
      );
      return (got.webhooks as JsonObject[]).every((w) => (w.clientConfig as JsonObject).caBundle);
    });
    // Both targets scraped, and the fail-open series this suite raises seen at 0 (so its first increase shows).
    await waitFor('Prometheus to scrape the operator and the API server', async () => {
      const up = await prometheus!.query('up == 1');
      const zero = await prometheus!.query(
        'modrule_webhook_fail_open_total{endpoint="dragnet",reason="rules_not_loaded"}',
      );
      return up.length === 2 && zero.length === 1;
    });
    measured['set-up'] = `${Date.now() - started} ms`;
  }, 120_000);

  afterAll(async () => {
    release();
    await prometheus?.stop();
    await operator?.stop();
    const problems = ledger ? await ledger.restore() : [];
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    process.stderr.write(
      `monitoring e2e measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
    if (problems.length > 0) throw new Error(problems.join('\n'));
  }, 60_000);

  it('loads the alerts unchanged but for their for: and evaluation interval', async () => {
    const original = parse(readFileSync(join(ROOT, 'config/monitoring/alerts.yaml'), 'utf8')) as JsonObject;
    const loaded = fastAlerts(2);
    const strip = (rules: JsonObject) =>
      (rules.groups as JsonObject[]).flatMap((g) =>
        (g.rules as JsonObject[]).map(({ for: _for, ...rest }) => rest),
      );
    expect(strip(loaded)).toEqual(strip(original));
    const names = (await prometheus!.rules()).map((r) => r.name);
    expect(names).toEqual(
      (original.groups as JsonObject[]).flatMap((g) => (g.rules as JsonObject[]).map((r) => r.alert)),
    );
  });

  it('a replica without its rules answers fail-open: ModRuleWebhookFailOpen and ModRuleWebhookUnreachable fire', async () => {
    // Each held until the API server's timeout less a second, then 503: failurePolicy Ignore admits it unchanged.
    // Two, a scrape apart: the API server's counter appears with the first (at 1), so only the second is an increase.
    for (let i = 0; i < 2; i++) {
      const t0 = Date.now();
      const made = await admin.request('POST', CONFIGMAPS(NS), {
        body: configMap(`before-sync-${i}`, 'unused'),
      });
      failOpenAt = Date.now();
      expect(failOpenAt - t0).toBeGreaterThanOrEqual((DRAGNET_TIMEOUT_SECONDS - 1) * 1000 - 100);
      expect((made.metadata as JsonObject).name).toBe(`before-sync-${i}`);
      await new Promise((r) => setTimeout(r, 1500));
    }
    await waitFor('ModRuleWebhookFailOpen to fire', () =>
      firing('ModRuleWebhookFailOpen', {
        endpoint: 'dragnet',
        reason: 'rules_not_loaded',
        severity: 'warning',
      }),
    );
    measured['fail-open answer to ModRuleWebhookFailOpen firing'] = `${Date.now() - failOpenAt} ms`;
    await waitFor('ModRuleWebhookUnreachable to fire (the API server failed open)', () =>
      firing('ModRuleWebhookUnreachable', { name: 'dragnet.kubemod.io', severity: 'critical' }),
    );
    release();
    await waitFor('the operator to be ready', async () => operator!.isReady());
  }, 60_000);

  it('a ModRule failing at run time fires ModRuleFailing, named by its namespace and name', async () => {
    await ledger.apply(
      rule(NS, 'divide-by-zero', {
        type: 'Patch',
        match: onLabel('fails'),
        patch: [{ op: 'add', path: '/metadata/labels/ratio', value: '{{ div 1 0 }}' }],
      }),
    );
    await ledger.apply(
      rule(NS, 'add-owner', {
        type: 'Patch',
        match: onLabel('owned'),
        patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'shop' }],
      }),
    );
    await ledger.apply(
      rule(NS, 'no-forbidden', { type: 'Reject', match: onLabel('forbidden'), rejectMessage: 'not here' }),
    );
    // In force once a write is patched (the dragnet's registration follows the rules).
    let n = 0;
    await waitFor('the rules to be in force', async () => {
      const cm = await admin.request('POST', CONFIGMAPS(NS), { body: configMap(`owned-${n++}`, 'owned') });
      return ((cm.metadata as JsonObject).labels as JsonObject).owner === 'shop';
    });
    await expect(
      admin.request('POST', CONFIGMAPS(NS), { body: configMap('forbidden', 'forbidden') }),
    ).rejects.toThrow(/no-forbidden: "not here"/);
    const failedAt = Date.now();
    for (let i = 0; i < 2; i++) {
      const cm = await admin.request('POST', CONFIGMAPS(NS), { body: configMap(`fails-${i}`, 'fails') });
      expect(((cm.metadata as JsonObject).labels as JsonObject).ratio).toBeUndefined();
    }
    await waitFor('ModRuleFailing to fire', () =>
      firing('ModRuleFailing', { namespace: NS, name: 'divide-by-zero', severity: 'warning' }),
    );
    measured['run-time failure to ModRuleFailing firing'] = `${Date.now() - failedAt} ms`;
  }, 60_000);

  it('Warn/DryRun rules and rules in conflict: ModRuleWouldReject and ModRuleConflicting fire', async () => {
    await ledger.apply(
      rule(NS, 'dry-tag', {
        type: 'Patch',
        enforcementAction: 'DryRun',
        match: onLabel('dry'),
        patch: [{ op: 'add', path: '/metadata/labels/tag', value: 'dry' }],
      }),
    );
    await ledger.apply(
      rule(NS, 'warn-debug', {
        type: 'Reject',
        enforcementAction: 'Warn',
        match: onLabel('debug'),
        rejectMessage: 'no debug ConfigMaps',
      }),
    );
    // One tier, one label, two values: a conflict (both rules show it), and every write one rule undoes the other.
    for (const [name, team] of [
      ['team-a', 'a'],
      ['team-b', 'b'],
    ])
      await ledger.apply(
        rule(NS, name, {
          type: 'Patch',
          match: onLabel('contested'),
          patch: [{ op: 'add', path: '/metadata/labels/team', value: team }],
        }),
      );
    let n = 0;
    await waitFor('the rules to be in force', async () => {
      const cm = await admin.request('POST', CONFIGMAPS(NS), {
        body: configMap(`contested-${n++}`, 'contested'),
      });
      return ((cm.metadata as JsonObject).labels as JsonObject).team === 'b';
    });
    const startedAt = Date.now();
    // Twice, a scrape apart: a counter's first sample is no increase.
    for (let i = 0; i < 2; i++) {
      const dry = await admin.request('POST', CONFIGMAPS(NS), { body: configMap(`dry-${i}`, 'dry') });
      expect(((dry.metadata as JsonObject).labels as JsonObject).tag).toBeUndefined();
      const debug = await admin.request('POST', CONFIGMAPS(NS), { body: configMap(`debug-${i}`, 'debug') });
      expect((debug.metadata as JsonObject).name).toBe(`debug-${i}`);
      await admin.request('POST', CONFIGMAPS(NS), { body: configMap(`contested-again-${i}`, 'contested') });
      await new Promise((r) => setTimeout(r, 1500));
    }
    await waitFor('ModRuleWouldReject to fire', () =>
      firing('ModRuleWouldReject', { namespace: NS, name: 'warn-debug', mode: 'Warn', severity: 'warning' }),
    );
    measured['Warn rule to ModRuleWouldReject firing'] = `${Date.now() - startedAt} ms`;
    await waitFor('ModRuleConflicting to fire', () => firing('ModRuleConflicting', { severity: 'warning' }));
    expect(
      (await prometheus!.query(`modrule_rule_would_patch_total{namespace="${NS}", name="dry-tag"}`))[0]
        .value[1],
    ).toBe('2');
  }, 60_000);

  it('heavy rules are quarantined: ModRuleQuarantined fires', async () => {
    // Eleven rules that each use up their share: the request's budget runs out too, and each rule is quarantined.
    for (let i = 0; i < 11; i++)
      await ledger.apply(
        rule(HEAVY_NS, `heavy-${String(i).padStart(2, '0')}`, {
          type: 'Patch',
          match: onLabel('heavy'),
          patch: [
            {
              op: 'add',
              path: '/metadata/annotations/heavy',
              value: '{{ range $i := until 1000000 }}{{ end }}x',
            },
          ],
        }),
      );
    let n = 0;
    await waitFor('the heavy rules to be quarantined', async () => {
      await admin.request('POST', CONFIGMAPS(HEAVY_NS), { body: configMap(`heavy-${n++}`, 'heavy') });
      return operator!.webhook.registry
        .getSingleMetric('modrule_quarantined_rules')
        ?.get()
        .then((m) => (m.values[0]?.value ?? 0) > 0);
    });
    await waitFor('ModRuleQuarantined to fire', () =>
      firing('ModRuleQuarantined', { pod: 'kubemod-operator-e2e' }),
    );
  }, 90_000);

  it('a pod binding is seen by the pod-binding webhook', async () => {
    // A Pod needs its namespace's default ServiceAccount: an existing cluster's controller-manager has made it,
    // an own control plane has none. It goes with the namespace.
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
        metadata: { name: 'bound' },
        // No scheduler serves this name: the cluster's own may not bind the Pod before the test does.
        spec: {
          schedulerName: 'modrule-e2e-none',
          containers: [{ name: 'c', image: 'registry.invalid/none:1' }],
        },
      },
    });
    await admin.request('POST', `/api/v1/namespaces/${NS}/pods/bound/binding`, {
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'bound' },
        target: { kind: 'Node', name: 'node-a' },
      },
    });
    // Scraped twice: a rate over the series needs two samples.
    await waitFor(
      'the binding counted',
      async () =>
        (await prometheus!.query('count_over_time(modrule_pod_bindings_total[1m]) >= 2')).length > 0,
    );
  }, 30_000);

  it('evaluates every alert without error, and every dashboard query parses and returns series', async () => {
    const health = await prometheus!.rules();
    expect(health.filter((r) => r.health !== 'ok')).toEqual([]);
    const dashboard = JSON.parse(
      readFileSync(join(ROOT, 'config/monitoring/dashboard.json'), 'utf8'),
    ) as JsonObject;
    const queries = dashboardQueries(dashboard);
    const empty: string[] = [];
    const pending: string[] = [];
    // Every series the run produced is in Prometheus once the audit has written a report and scanned twice.
    await waitFor('a background scan counted twice', async () => {
      const scans = await prometheus!.query(
        'sum(increase(modrule_audit_scans_total{result="complete"}[1m])) > 0',
      );
      return scans.length > 0;
    });
    for (const q of queries) {
      const expr = concreteQuery(q.expr, '1m', '10m');
      const result = await prometheus!.query(expr); // throws with Prometheus' parse error
      if (result.length > 0) continue;
      const waiting = pendingMetricsOf(q.expr);
      if (waiting.length > 0) pending.push(`${q.title} ${q.refId}: ${waiting.join(', ')}`);
      else empty.push(`${q.title} ${q.refId}: ${expr}`);
    }
    measured['dashboard queries'] =
      `${queries.length}, ${pending.length} waiting for metrics not on this branch`;
    if (pending.length > 0)
      process.stderr.write(
        `dashboard queries on metrics not exported yet (no series):\n  ${pending.join('\n  ')}\n`,
      );
    expect(empty).toEqual([]);
  }, 120_000);

  it('the fail-open and rule-failure alerts resolve once their events are out of the window', async () => {
    const waitedFrom = Date.now();
    await waitFor(
      'ModRuleWebhookFailOpen and ModRuleFailing to resolve',
      async () =>
        !(await firing('ModRuleWebhookFailOpen')) &&
        !(await firing('ModRuleFailing')) &&
        !(await prometheus!.alerts()).some((a) =>
          ['ModRuleWebhookFailOpen', 'ModRuleFailing'].includes(a.labels.alertname),
        ),
      240_000,
      1000,
    );
    measured['fail-open answer to resolved'] = `${Date.now() - failOpenAt} ms`;
    measured['waited for resolution'] = `${Date.now() - waitedFrom} ms`;
    // The rule still exists and still fails on new objects: it is the window that moved on, not the series.
    expect(
      (await prometheus!.query(`modrule_rule_errors_total{namespace="${NS}", name="divide-by-zero"}`))[0]
        .value[1],
    ).toBe('2');
  }, 300_000);
});
