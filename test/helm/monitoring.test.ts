import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';
import { parseYamlDocuments } from '../../util/yaml';
import { Helm, helm, helmAvailable, newHelm, ROOT, skipNotice } from './helm';

/*
 * charts/modrule's monitoring values with the real Helm binaries: the PrometheusRule is config/monitoring/alerts.yaml
 * and the dashboard ConfigMap holds config/monitoring/dashboard.json, both as the kustomize overlay has them; off by
 * default, so the chart renders without the Prometheus Operator's CRDs.
 */

const available = helmAvailable();
if (!available) skipNotice();
const describeHelm = available ? describe : describe.skip;

const CHART = join(ROOT, 'charts', 'modrule');
const MONITORING = join(ROOT, 'config', 'monitoring');
const tmp = mkdtempSync(join(tmpdir(), 'modrule-chart-monitoring-'));
const read = (file: string) => readFileSync(join(MONITORING, file), 'utf8');
const objects = (text: string): JsonObject[] => parseYamlDocuments(text).filter(isJsonObject);
const find = (list: JsonObject[], kind: string) => list.filter((o) => o.kind === kind);

describeHelm.each([3, 4] as const)('charts/modrule monitoring with Helm %i', (major) => {
  let h: Helm;
  let n = 0;

  async function render(values: JsonObject): Promise<JsonObject[]> {
    const file = join(tmp, `values-${major}-${n++}.yaml`);
    writeFileSync(file, stringify(values));
    const r = await helm(h, ['template', 'modrule', CHART, '-f', file]);
    if (r.code !== 0) throw new Error(`helm template -f ${JSON.stringify(values)}: ${r.stderr}`);
    return objects(r.stdout);
  }

  beforeAll(() => {
    h = newHelm(major);
  });

  it('renders nothing of the Prometheus Operator or Grafana by default', async () => {
    const all = await render({});
    expect(all.filter((o) => String(o.apiVersion).startsWith('monitoring.coreos.com/'))).toEqual([]);
    expect(find(all, 'ConfigMap')).toEqual([]);
  });

  it('renders the PrometheusRule and ServiceMonitor of config/monitoring, with the labels asked for', async () => {
    const all = await render({
      metrics: {
        prometheusRule: { enabled: true, labels: { release: 'kps' } },
        serviceMonitor: { enabled: true },
      },
    });
    const [rule] = find(all, 'PrometheusRule');
    const overlay = parse(read('prometheus_rule.yaml')) as JsonObject;
    expect(rule.spec).toEqual(parse(read('alerts.yaml')));
    expect(rule.metadata).toEqual({
      ...(overlay.metadata as JsonObject),
      labels: { ...((overlay.metadata as JsonObject).labels as JsonObject), release: 'kps' },
    });
    const [monitor] = find(all, 'ServiceMonitor');
    expect(monitor.spec).toEqual((parse(read('service_monitor.yaml')) as JsonObject).spec);
  });

  it('renders the dashboard as a ConfigMap holding dashboard.json, for the sidecar label asked for', async () => {
    const [byDefault] = find(await render({ metrics: { dashboard: { enabled: true } } }), 'ConfigMap');
    expect(byDefault.metadata).toEqual({
      name: 'kubemod-dashboard',
      namespace: 'kubemod-system',
      labels: { 'app.kubernetes.io/part-of': 'modrule', grafana_dashboard: '1' },
    });
    expect((byDefault.data as JsonObject)['modrule.json']).toBe(read('dashboard.json'));
    const [own] = find(
      await render({
        metrics: {
          dashboard: {
            enabled: true,
            namespace: 'monitoring',
            label: 'dashboards',
            labelValue: 'policy',
            annotations: { grafana_folder: 'Policy' },
          },
        },
      }),
      'ConfigMap',
    );
    expect(own.metadata).toEqual({
      name: 'kubemod-dashboard',
      namespace: 'monitoring',
      labels: { 'app.kubernetes.io/part-of': 'modrule', dashboards: 'policy' },
      annotations: { grafana_folder: 'Policy' },
    });
    expect(own.data).toEqual(byDefault.data);
  });

  it('passes helm lint --strict with all of it on', async () => {
    const r = await helm(h, [
      'lint',
      '--strict',
      CHART,
      '--set',
      'metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true',
    ]);
    expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(r.code).toBe(0);
  });

  it('refuses a dashboard label that is empty (values.schema.json)', async () => {
    const r = await helm(h, ['template', 'modrule', CHART, '--set', 'metrics.dashboard.label=']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('/metrics/dashboard/label');
  });
});
