import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { FakeCluster } from '../operator/testing/fake-cluster';
import { KubeApiError } from '../kube/kube';
import { InClusterAccess } from '../kube/incluster';
import { AuditHooks, runAudit } from './audit';
import { main } from './main';
import { runCommand } from './testing';
import { CommandIO } from './io';

const RULES = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: team, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}, {select: '$.metadata.labels.team', negate: true}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-passwords, namespace: shop}
spec:
  type: Reject
  rejectMessage: '{{ .Target.metadata.name }} holds a password'
  match: [{select: '$.kind', matchValue: ConfigMap}, {select: '$.data.password'}]
`;

function cluster(): FakeCluster {
  const c = new FakeCluster();
  c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
  c.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'app', namespace: 'shop' },
    data: { a: 'b' },
  });
  c.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'db', namespace: 'shop', labels: { team: 'x' } },
    data: { password: 'p' },
  });
  c.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'ok', namespace: 'shop', labels: { team: 'x' } },
  });
  for (const doc of parseAllDocuments(RULES)) c.put(doc.toJS() as JsonObject);
  return c;
}

const audit = (args: string[], hooks: AuditHooks, stdin?: string) =>
  runCommand((a, io) => runAudit(a, io, hooks), args, { stdin });

describe('modrule audit', () => {
  it('prints what would change, one line per object, then totals; exit 2 when something would', async () => {
    const c = cluster();
    const out = await audit([], { client: c });
    expect(out.code).toBe(2);
    const lines = out.stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'would patch   ConfigMap shop/app  by shop/team: add /metadata/labels',
      'would reject  ConfigMap shop/db  operation rejected by the following ModRule(s): shop/no-passwords: "db holds a password"',
    ]);
    expect(lines[2]).toMatch(
      /^audited 3 objects of 1 resource \(3 listed\) in [\d.]+ s: 1 would be patched, 1 would be rejected, 0 failed, 1 in line$/,
    );
    expect(out.stderr).toContain('modrule audit: 2 ModRules; listing configmaps');
    // Nothing written.
    expect(c.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('-o json: every audited object with its verdict, patch and rules, and a summary', async () => {
    const out = await audit(['-o', 'json'], { client: cluster() });
    const result = JSON.parse(out.stdout) as { objects: JsonObject[]; summary: JsonObject };
    expect(result.objects.map((o) => [o.name, o.verdict])).toEqual([
      ['app', 'patch'],
      ['db', 'reject'],
      ['ok', 'pass'],
    ]);
    expect(result.objects[0]).toMatchObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'shop',
      patch: [{ op: 'add', path: '/metadata/labels', value: { team: 'platform' } }],
      rules: [
        { rule: 'shop/no-passwords', type: 'Reject', verdict: 'pass', message: null },
        { rule: 'shop/team', type: 'Patch', verdict: 'patch', message: null },
      ],
    });
    expect(result.summary).toMatchObject({
      listed: 3,
      audited: 3,
      complete: true,
      verdicts: { patch: 1, reject: 1 },
    });
  });

  it('-o report: the reports the operator would write, as YAML for kubectl apply', async () => {
    const out = await audit(['-o', 'report', '--report-format', 'wgpolicyk8s'], { client: cluster() });
    const docs = parseAllDocuments(out.stdout).map((d) => d.toJS() as JsonObject);
    expect(docs.map((d) => [d.kind, (d.metadata as JsonObject).namespace])).toEqual([
      ['PolicyReport', 'shop'],
    ]);
    expect(docs[0].summary).toEqual({ pass: 4, fail: 2, warn: 0, error: 0, skip: 0 });
    expect(out.stderr).toContain('audited 3 objects');
  });

  it('--apply brings objects in line (not the rejected one), and a second audit finds nothing more to patch', async () => {
    const c = cluster();
    const first = await audit(['--apply'], { client: c });
    expect(first.stdout).toContain('-> patched\n');
    expect(first.stdout).toContain('-> not touched: a Reject rule would refuse the update');
    expect(first.stdout).toMatch(
      /applied: 1 patched, 0 dry run only, 0 in line after a fresh read, 1 rejected/,
    );
    expect(first.code).toBe(2); // the rejected one is still not in line
    expect(((c.get('ConfigMap', 'shop', 'app')!.metadata as JsonObject).labels as JsonObject).team).toBe(
      'platform',
    );
    expect(c.requests.filter((r) => r.method === 'PATCH').map((r) => r.path)).toEqual([
      '/api/v1/namespaces/shop/configmaps/app',
      '/api/v1/namespaces/shop/configmaps/app',
    ]);
    c.delete('ConfigMap', 'shop', 'db');
    const second = await audit(['-o', 'json'], { client: c });
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout).summary.verdicts).toEqual({ patch: 0, reject: 0, error: 0, pass: 2 });
  });

  it('--apply --dry-run shows the request it would send and writes nothing', async () => {
    const c = cluster();
    const rv = (c.get('ConfigMap', 'shop', 'app')!.metadata as JsonObject).resourceVersion;
    const out = await audit(['--apply', '--dry-run', '-l', 'x=y'], { client: c });
    expect(out.code).toBe(0); // nothing has label x=y
    const dry = await audit(['--apply', '--dry-run'], { client: c });
    expect(dry.stdout).toContain(
      '                 PATCH /api/v1/namespaces/shop/configmaps/app?fieldManager=modrule\n' +
        '                 Content-Type: application/json-patch+json\n' +
        `                 [{"op":"test","path":"/metadata/resourceVersion","value":"${String(rv)}"},{"op":"add","path":"/metadata/labels","value":{"team":"platform"}}]\n`,
    );
    expect(c.requests.filter((r) => r.method === 'PATCH').every((r) => r.query.dryRun === 'All')).toBe(true);
    expect((c.get('ConfigMap', 'shop', 'app')!.metadata as JsonObject).resourceVersion).toBe(rv);
  });

  it('takes rules from files, and says when they name a kind the cluster does not serve', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-audit-'));
    writeFileSync(
      join(dir, 'rules.yaml'),
      `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: widgets}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Widget}]
  patch: [{op: add, path: /metadata/labels/a, value: b}]
`,
    );
    const out = await audit(['--rules', dir, '-n', 'shop'], { client: cluster() });
    expect(out.code).toBe(0);
    expect(out.stderr).toContain(
      'note: kind Widget (named by ModRule shop/widgets) is not served by this cluster: nothing to audit',
    );
  });

  it('reads rules from standard input with --rules -', async () => {
    const out = await audit(['--rules', '-', '-o', 'json'], { client: cluster() }, RULES.split('---')[0]);
    expect(JSON.parse(out.stdout).summary.verdicts).toEqual({ patch: 1, reject: 0, error: 0, pass: 2 });
  });

  it('reports partial results when a list is forbidden, with exit 1', async () => {
    const c = cluster();
    c.hooks.push((req) => {
      if (req.path.endsWith('/configmaps'))
        throw new KubeApiError(
          '403 Forbidden: configmaps is forbidden: User "jane" cannot list',
          403,
          'Forbidden',
        );
    });
    const out = await audit([], { client: c });
    expect(out.code).toBe(1);
    expect(out.stdout).toContain(
      'partial: forbidden: cannot list configmaps in namespace shop: 403 Forbidden',
    );
  });

  it('skips invalid ModRules found in the cluster, as the webhook does, and says so', async () => {
    const c = cluster();
    c.put({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'broken', namespace: 'shop' },
      spec: { type: 'Patch', match: [{ select: '$.kind', matchRegex: '(' }] },
    });
    const out = await audit([], { client: c });
    expect(out.stderr).toMatch(
      /note: ModRule shop\/broken is invalid and skipped \(as the webhook skips it\): spec\.match\[0\]\.matchRegex/,
    );
    expect(out.code).toBe(2);
  });

  it('says clearly when the cluster cannot be reached, and when there are no credentials', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-audit-'));
    writeFileSync(join(dir, 'token'), 't');
    writeFileSync(join(dir, 'ca.crt'), '');
    // A loopback port nothing listens on.
    const access = new InClusterAccess('https://127.0.0.1:1', { dir });
    await expect(audit([], { access })).rejects.toThrow(
      /^cannot reach the API server at https:\/\/127\.0\.0\.1:1: GET .*ECONNREFUSED/,
    );
    await expect(audit([], { env: { HOME: dir } })).rejects.toThrow(
      /^no usable Kubernetes configuration: not running in a cluster .* and no kubeconfig found/,
    );
  });

  it('refuses bad usage with the reason (exit 1 through main)', async () => {
    let stderr = '';
    const io: CommandIO = {
      stdout: () => undefined,
      stderr: (t) => (stderr += t),
      readStdin: async () => '',
    };
    expect(await main(['audit', '--dry-run'], io)).toBe(1);
    expect(stderr).toContain('modrule audit: --dry-run only makes sense with --apply');
    for (const [args, message] of [
      [['-o', 'yaml'], '--output must be text, json or report'],
      [['--qps', '0'], '--qps must be a positive number'],
      [['--report-format', 'kyverno'], '--report-format must be openreports or wgpolicyk8s'],
      [['--concurrency', '1.5'], '--concurrency must be a whole number'],
    ] as const) {
      await expect(audit([...args], { client: cluster() })).rejects.toThrow(message);
    }
  });
});
