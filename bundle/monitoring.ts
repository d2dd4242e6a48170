import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { isJsonObject } from '../util/json';

// config/monitoring: alerts.yaml (a Prometheus rule file) and dashboard.json (a Grafana dashboard) are the sources;
// the PrometheusRule of the kustomize overlay is generated from alerts.yaml (here, by `make bundle`), the dashboard's
// ConfigMap by kustomize's configMapGenerator, and the Helm chart reads both files. Tests keep them equal.

const HEADER =
  '# Generated from alerts.yaml by `make bundle` (bundle/monitoring.ts): edit alerts.yaml, not this file.\n' +
  '# Prometheus Operator selects rules by label: add the labels your Prometheus has as ruleSelector (with\n' +
  '# kube-prometheus-stack, release: <its release name>), e.g. with a kustomize patch. See docs/monitoring.md.\n';

/** The PrometheusRule holding the rule file `alerts` (its text, comments kept) as its spec. */
export function renderPrometheusRule(alerts: string): string {
  const parsed: unknown = parse(alerts);
  if (!isJsonObject(parsed) || !Array.isArray(parsed.groups) || Object.keys(parsed).length !== 1)
    throw new Error('alerts.yaml: a Prometheus rule file has one key, groups');
  const body = alerts
    .split('\n')
    .filter((line, i, all) => !(i === all.length - 1 && line === ''))
    .map((line) => (line === '' ? '' : `  ${line}`))
    .join('\n');
  return (
    HEADER +
    'apiVersion: monitoring.coreos.com/v1\n' +
    'kind: PrometheusRule\n' +
    'metadata:\n' +
    '  name: kubemod-operator\n' +
    '  namespace: kubemod-system\n' +
    '  labels:\n' +
    '    app.kubernetes.io/part-of: modrule\n' +
    'spec:\n' +
    `${body}\n`
  );
}

/** Writes prometheus_rule.yaml from alerts.yaml in `dir`; returns whether it changed. */
export function writePrometheusRule(dir: string): boolean {
  const want = renderPrometheusRule(fs.readFileSync(path.join(dir, 'alerts.yaml'), 'utf8'));
  const file = path.join(dir, 'prometheus_rule.yaml');
  const have = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  if (have === want) return false;
  fs.writeFileSync(file, want);
  return true;
}

// node dist/bundle/monitoring.js config/monitoring
if (require.main === module) {
  const dir = process.argv[2] ?? 'config/monitoring';
  if (writePrometheusRule(dir)) process.stdout.write(`wrote ${path.join(dir, 'prometheus_rule.yaml')}\n`);
}
