import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { REPORT_APIS, ReportFormat } from '../audit/report';

// config/reports/<format>: the bundle plus what the operator's background audit needs (issue 21).

const ROOT = path.resolve(__dirname, '..');
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
const withKubectl = hasKubectl ? it : it.skip;

function build(dir: string): JsonObject[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { cwd: ROOT, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as JsonObject);
}

const find = (docs: JsonObject[], kind: string, name: string) =>
  docs.find((d) => d.kind === kind && (d.metadata as JsonObject).name === name) as JsonObject;

describe.each(['openreports', 'wgpolicyk8s'] as ReportFormat[])('config/reports/%s overlay', (format) => {
  withKubectl(
    'is the bundle plus the report CRDs, read-only audit RBAC, report RBAC and MODRULE_REPORTS',
    () => {
      const docs = build(`config/reports/${format}`);
      const bundle = build('config/default');
      // Everything of the bundle is there.
      for (const b of bundle)
        expect(find(docs, String(b.kind), String((b.metadata as JsonObject).name))).toBeDefined();
      const api = REPORT_APIS[format];
      for (const resource of [api.namespaced.resource, api.cluster.resource])
        expect(find(docs, 'CustomResourceDefinition', `${resource}.${api.group}`)).toBeDefined();
      const container = (
        (
          ((find(docs, 'Deployment', 'kubemod-operator').spec as JsonObject).template as JsonObject)
            .spec as JsonObject
        ).containers as JsonObject[]
      )[0];
      expect(container.env).toContainEqual({ name: 'MODRULE_REPORTS', value: format });
      // The audit reads; nothing it adds can write anything but reports.
      const audit = find(docs, 'ClusterRole', 'kubemod-operator-audit');
      const reports = find(docs, 'ClusterRole', 'kubemod-operator-reports');
      for (const rule of audit.rules as JsonObject[]) {
        expect(rule.verbs).toEqual(['get', 'list']);
        expect(rule.resources).not.toContain('secrets');
      }
      expect(reports.rules).toEqual([
        {
          apiGroups: [api.group],
          resources: [api.namespaced.resource, api.cluster.resource],
          verbs: ['get', 'list', 'create', 'update', 'delete'],
        },
      ]);
      // Every resource the dragnet receives by default can be listed (the operator's own role has some), but Secrets.
      const listable = new Set(
        [audit, find(docs, 'ClusterRole', 'kubemod-operator')].flatMap((role) =>
          (role.rules as JsonObject[])
            .filter((r) => (r.verbs as string[]).includes('list') && !r.resourceNames)
            .flatMap((r) => r.resources as string[]),
        ),
      );
      const dragnet = (
        (
          find(docs, 'MutatingWebhookConfiguration', 'kubemod-mutating-webhook-configuration')
            .webhooks as JsonObject[]
        ).find((w) => w.name === 'dragnet.kubemod.io') as JsonObject
      ).rules as JsonObject[];
      const missing = dragnet.flatMap((r) => r.resources as string[]).filter((r) => !listable.has(r));
      expect(missing).toEqual(['secrets']);
      for (const name of ['kubemod-operator-audit', 'kubemod-operator-reports'])
        expect((find(docs, 'ClusterRoleBinding', name).subjects as JsonObject[])[0]).toEqual({
          kind: 'ServiceAccount',
          name: 'kubemod-operator',
          namespace: 'kubemod-system',
        });
    },
  );
});
