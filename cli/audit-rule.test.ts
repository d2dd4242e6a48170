import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { FakeCluster } from '../operator/testing/fake-cluster';
import { AuditHooks, runAudit } from './audit';
import { runCommand } from './testing';

// modrule audit --rule: before switching a DryRun rule to Enforce, what enforcing it would change in place.

const RULES = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: team, namespace: shop}
spec:
  type: Patch
  enforcementAction: DryRun
  match: [{select: '$.kind', matchValue: ConfigMap}, {select: '$.metadata.labels.team', negate: true}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: tier, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch: [{op: add, path: /metadata/annotations/tier, value: web}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: team, namespace: other}
spec:
  type: Reject
  match: [{select: '$.kind', matchValue: Secret}]
`;

function cluster(): FakeCluster {
  const c = new FakeCluster();
  for (const ns of ['shop', 'other']) c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  c.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: 'shop' }, data: {} });
  c.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'done', namespace: 'shop', labels: { team: 'x' } },
  });
  for (const doc of parseAllDocuments(RULES)) c.put(doc.toJS() as JsonObject);
  return c;
}

const audit = (args: string[], hooks: AuditHooks) => runCommand((a, io) => runAudit(a, io, hooks), args);

describe('modrule audit --rule', () => {
  it("lists what enforcing a DryRun rule would change, with that rule's own patch only; exit 2", async () => {
    const out = await audit(['--rule', 'shop/team'], { client: cluster() });
    expect(out.code).toBe(2);
    const lines = out.stdout.split('\n');
    expect(lines[0]).toBe(
      'would patch   ConfigMap shop/app  by shop/team: add /metadata/labels (DryRun: not enforced yet)',
    );
    expect(lines[1]).toMatch(/: 1 would be patched, 0 would be rejected, 0 failed, 1 in line$/);
  });

  it('-o json names the mode; nothing is written', async () => {
    const c = cluster();
    const out = await audit(['--rule', 'shop/team', '-o', 'json'], { client: c });
    const result = JSON.parse(out.stdout) as { objects: JsonObject[] };
    expect(result.objects[0]).toMatchObject({
      name: 'app',
      verdict: 'patch',
      patch: [{ op: 'add', path: '/metadata/labels', value: { team: 'platform' } }],
      rules: [{ rule: 'shop/team', verdict: 'patch', mode: 'DryRun' }],
    });
    expect(c.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('an ambiguous or unknown name, and --apply, are refused with the reason', async () => {
    await expect(audit(['--rule', 'team'], { client: cluster() })).rejects.toThrow(
      '--rule team: 2 ModRules have that name (other/team, shop/team); give namespace/name',
    );
    await expect(audit(['--rule', 'shop/nope'], { client: cluster() })).rejects.toThrow(
      '--rule shop/nope: no such ModRule among the 3 loaded',
    );
    await expect(audit(['--rule', 'shop/team', '--apply'], { client: cluster() })).rejects.toThrow(
      'set the rule to Enforce and run --apply',
    );
  });

  it('an enforced rule: the objects it patches, in line when it would change nothing', async () => {
    const out = await audit(['--rule', 'tier'], { client: cluster() });
    expect(out.stdout.split('\n').filter((l) => l.startsWith('would patch'))).toHaveLength(2);
  });
});
