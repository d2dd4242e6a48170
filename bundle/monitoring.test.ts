import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Registry } from 'prom-client';
import { parse, parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { RequestMetrics } from '../webhook/metrics';
import { prometheusTool } from '../test/prometheus';
import { renderPrometheusRule } from './monitoring';
import { dashboardQueries, PENDING_METRICS } from '../test/monitoring';

// config/monitoring: the alerts checked and unit-tested with the real promtool, the generated PrometheusRule and the
// overlay's dashboard ConfigMap kept equal to their sources, every metric they name exists, every alert has a runbook.

const ROOT = path.join(__dirname, '..');
const DIR = path.join(ROOT, 'config', 'monitoring');
const read = (file: string) => readFileSync(path.join(DIR, file), 'utf8');
const alerts = parse(read('alerts.yaml')) as { groups: Array<{ rules: JsonObject[] }> };
const alertRules = alerts.groups.flatMap((g) => g.rules).filter((r) => typeof r.alert === 'string');
const alertNames = [...new Set(alertRules.map((r) => String(r.alert)))];

const promtool = prometheusTool('promtool');
const withPromtool = promtool ? it : it.skip;

describe('config/monitoring/alerts.yaml', () => {
  withPromtool('passes promtool check rules', () => {
    const r = spawnSync(promtool!, ['check', 'rules', 'alerts.yaml'], { cwd: DIR, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`SUCCESS: ${alertRules.length} rules found`);
    expect(r.status).toBe(0);
  });

  withPromtool('passes its unit tests (promtool test rules alerts.test.yaml)', () => {
    const r = spawnSync(promtool!, ['test', 'rules', 'alerts.test.yaml'], { cwd: DIR, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).toContain('SUCCESS');
    expect(r.status).toBe(0);
  });

  it('has unit tests showing every alert firing and not firing', () => {
    const tests = (parse(read('alerts.test.yaml')) as { tests: JsonObject[] }).tests;
    const cases = tests.flatMap((t) => (t.alert_rule_test ?? []) as JsonObject[]);
    for (const name of alertNames) {
      const own = cases.filter((c) => c.alertname === name);
      expect({ name, firing: own.some((c) => (c.exp_alerts as unknown[]).length > 0) }).toEqual({
        name,
        firing: true,
      });
      expect({ name, quiet: own.some((c) => (c.exp_alerts as unknown[]).length === 0) }).toEqual({
        name,
        quiet: true,
      });
    }
  });

  it('gives every alert a severity and a runbook section in docs/monitoring.md', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'monitoring.md'), 'utf8');
    for (const rule of alertRules) {
      const name = String(rule.alert);
      expect((rule.labels as JsonObject).severity).toMatch(/^(warning|critical)$/);
      expect((rule.annotations as JsonObject).runbook_url).toBe(
        `https://github.com/modrule/modrule/blob/main/docs/monitoring.md#${name.toLowerCase()}`,
      );
      expect(doc).toMatch(new RegExp(`^### ${name}$`, 'm'));
    }
  });

  it('compares latency with the timeout the API server gives each webhook, whose half is a bucket bound', async () => {
    const slow = alertRules.find((r) => r.alert === 'ModRuleWebhookSlow')!;
    expect(String(slow.expr)).toContain(
      '> on (endpoint) 0.5 * max by (endpoint) (modrule_webhook_timeout_seconds)',
    );
    // The configured timeouts (bundle: dragnet 10 s, ModRule webhooks 5 and 10 s, the registration probe 2 s): half
    // of each is a bucket bound, so the 99th percentile crossing it is exact, not interpolated.
    const timeouts = parseAllDocuments(readFileSync(path.join(ROOT, 'bundle.yaml'), 'utf8'))
      .map((d) => d.toJS() as JsonObject)
      .filter((o) => /WebhookConfiguration$/.test(String(o.kind)))
      .flatMap((o) => (o.webhooks as JsonObject[]).map((w) => Number(w.timeoutSeconds)));
    expect(new Set(timeouts)).toEqual(new Set([2, 5, 10]));
    const registry = new Registry();
    const metrics = new RequestMetrics(registry);
    metrics.observe('dragnet', 'CREATE', 'allowed', 0.001);
    const bounds = [...(await registry.metrics()).matchAll(/_bucket\{[^}]*le="([^"]+)"/g)].map((m) => m[1]);
    for (const t of timeouts) expect(bounds).toContain(String(t / 2));
    for (const t of [5, 10]) expect(bounds).toContain(String(t));
  });
});

describe('config/monitoring: generated objects', () => {
  it('prometheus_rule.yaml is alerts.yaml as a PrometheusRule (make bundle writes it)', () => {
    expect(read('prometheus_rule.yaml')).toBe(renderPrometheusRule(read('alerts.yaml')));
    const rule = parse(read('prometheus_rule.yaml')) as JsonObject;
    expect(rule.spec).toEqual(alerts);
  });

  const kubectl = ['KUBEBUILDER_ASSETS', 'MODRULE_ENVTEST_BIN']
    .map((v) => process.env[v])
    .concat('/tmp/modrule-envtest-1.37/bin')
    .map((d) => (d ? path.join(d, 'kubectl') : ''))
    .find((f) => f && existsSync(f));
  (kubectl ? it : it.skip)(
    'kubectl kustomize config/monitoring: the dashboard ConfigMap holds dashboard.json',
    () => {
      const r = spawnSync(kubectl!, ['kustomize', DIR], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as JsonObject);
      expect(docs.map((d) => `${String(d.kind)}/${String((d.metadata as JsonObject).name)}`).sort()).toEqual([
        'ConfigMap/kubemod-dashboard',
        'PrometheusRule/kubemod-operator',
        'ServiceMonitor/kubemod-operator',
      ]);
      const configMap = docs.find((d) => d.kind === 'ConfigMap')!;
      expect((configMap.data as JsonObject)['modrule.json']).toBe(read('dashboard.json'));
      expect((configMap.metadata as JsonObject).labels).toMatchObject({ grafana_dashboard: '1' });
      expect(docs.find((d) => d.kind === 'PrometheusRule')!.spec).toEqual(alerts);
    },
  );
});

/** Every metric name the files use: modrule_*, with a histogram's _bucket/_sum/_count taken off. */
function metricNames(text: string): string[] {
  const names = [...text.matchAll(/\b(modrule_[a-z0-9_]+)/g)].map((m) =>
    m[1].replace(/_(bucket|sum|count)$/, ''),
  );
  return [...new Set(names)].sort();
}

/** Every metric the code registers: `name: 'modrule_...'` in the sources, and prom-client's defaults. */
function registeredMetrics(): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (['node_modules', 'dist', '.git', 'test'].includes(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
        for (const m of readFileSync(full, 'utf8').matchAll(/name: '(modrule_[a-z0-9_]+)'/g)) out.add(m[1]);
    }
  };
  walk(ROOT);
  return out;
}

describe('config/monitoring: the metrics named exist', () => {
  const registered = registeredMetrics();
  const known = (name: string) =>
    registered.has(name) || PENDING_METRICS.has(name) || /^modrule_(process|nodejs)_/.test(name);

  it.each([['alerts.yaml'], ['dashboard.json']])('%s names only metrics the operator exports', (file) => {
    const unknown = metricNames(read(file)).filter((n) => !known(n));
    expect(unknown).toEqual([]);
  });

  it('documents every metric the operator exports in docs/install.md', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'install.md'), 'utf8');
    expect([...registered].filter((n) => !doc.includes(`\`${n}\``)).sort()).toEqual([]);
  });
});

describe('config/monitoring/dashboard.json', () => {
  const dashboard = JSON.parse(read('dashboard.json')) as JsonObject;
  const queries = dashboardQueries(dashboard);

  it('has a data source and a job variable, and unique panel ids', () => {
    const vars = ((dashboard.templating as JsonObject).list as JsonObject[]).map((v) => [v.name, v.type]);
    expect(vars).toEqual([
      ['datasource', 'datasource'],
      ['job', 'query'],
    ]);
    const panels = dashboard.panels as JsonObject[];
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
  });

  it('filters every modrule series by the job variable and uses the variable data source', () => {
    for (const q of queries) {
      for (const selector of q.expr.matchAll(/\b(modrule_[a-z0-9_]+)\{([^}]*)\}/g))
        expect({
          panel: q.title,
          selector: selector[0],
          job: selector[2].includes('job=~"$job"'),
        }).toMatchObject({
          job: true,
        });
      expect(q.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
    }
  });

  it.each([
    ['admissions by outcome', /modrule_webhook_requests_total/],
    ['latency percentiles', /histogram_quantile\(0\.99, .*modrule_webhook_request_duration_seconds_bucket/],
    ['fail-open answers', /modrule_webhook_fail_open_total/],
    ['rule run-time failures', /modrule_rule_errors_total/],
    ['quarantines', /modrule_rule_quarantines_total/],
    ['the dragnet scope (wide fallback)', /modrule_dragnet_scope_wide_fallback/],
    ['native serving', /modrule_native_rules/],
    ['audit scans', /modrule_audit_scans_total/],
    ['report status', /modrule_audit_reports_partial/],
    ['report age', /modrule_audit_last_scan_timestamp_seconds/],
    ['would-be patches of Warn/DryRun rules', /modrule_rule_would_patch_total/],
    ['would-be rejections of Warn/DryRun rules', /modrule_rule_would_reject_total/],
    ['rules in conflict', /modrule_rules_conflicting/],
    ['conflicts by kind', /modrule_rule_conflicts\b/],
    ['writes undone by a later rule', /modrule_rule_overrides_total/],
  ])('shows %s', (_what, pattern) => {
    expect(queries.some((q) => pattern.test(q.expr))).toBe(true);
  });
});

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
const withKubectl = hasKubectl ? it : it.skip;

describe("docs/monitoring.md: the release label for kube-prometheus-stack's selectors", () => {
  withKubectl('the overlay the page gives builds with kubectl kustomize and labels both objects', () => {
    const page = readFileSync(path.join(ROOT, 'docs', 'monitoring.md'), 'utf8');
    const at = page.indexOf('# my-monitoring/kustomization.yaml');
    expect(at).toBeGreaterThan(0);
    const overlay = page.slice(at, page.indexOf('```', at));
    // The layout the page assumes: the overlay's folder beside a checkout of modrule.
    const dir = mkdtempSync(path.join(tmpdir(), 'modrule-monitoring-'));
    symlinkSync(ROOT, path.join(dir, 'modrule'));
    mkdirSync(path.join(dir, 'my-monitoring'));
    writeFileSync(path.join(dir, 'my-monitoring', 'kustomization.yaml'), overlay);
    const r = spawnSync('kubectl', ['kustomize', 'my-monitoring'], { cwd: dir, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const objects = parseAllDocuments(r.stdout).map((d) => d.toJSON() as JsonObject);
    const byKind = (kind: string) => objects.find((o) => o.kind === kind)!;
    const labels = (o: JsonObject) => (o.metadata as JsonObject).labels as JsonObject;
    for (const kind of ['ServiceMonitor', 'PrometheusRule'])
      expect(labels(byKind(kind)).release).toBe('kube-prometheus-stack');
    // What the ServiceMonitor scrapes is as in config/monitoring: the label is on the objects, not in selectors.
    const own = parse(read('service_monitor.yaml')) as JsonObject;
    expect(byKind('ServiceMonitor').spec).toEqual(own.spec);
  });
});
