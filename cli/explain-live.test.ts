import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { FakeCluster } from '../operator/testing/fake-cluster';
import { KubeApiError } from '../kube/kube';
import { EXIT } from './exit';
import { UsageError } from './io';
import { ExplainHooks, runExplain } from './explain-live';
import { runCommand, writeRule } from './testing';

// `modrule explain` against an in-memory API server; the real one (1.37) is test/e2e/explain.e2e.ts.

const RULES = `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: team, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}, {select: '$.metadata.labels.team', negate: true}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-latest, namespace: kubemod-system}
spec:
  type: Reject
  targetNamespaceSelector: {matchLabels: {env: prod}}
  rejectMessage: '{{ .Target.metadata.name }} runs :latest'
  match: [{select: '$.spec.template.spec.containers[*].image', matchRegex: ':latest$'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: elsewhere, namespace: other}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/x, value: y}]
`;

const deployment = (image: string, labels: JsonObject = {}): JsonObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', labels },
  spec: { template: { spec: { containers: [{ name: 'web', image }] } } },
});

function cluster(image: string, labels: JsonObject = {}, env = 'prod'): FakeCluster {
  const c = new FakeCluster();
  c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { env } } });
  c.put(deployment(image, labels));
  for (const doc of parseAllDocuments(RULES)) c.put(doc.toJS() as JsonObject);
  return c;
}

const explain = (args: string[], hooks: ExplainHooks) =>
  runCommand((a, io) => runExplain(a, io, hooks), args);

describe('modrule explain', () => {
  it('says which rule would patch the live object and why, with the patch; exit 2', async () => {
    const c = cluster('nginx:1.25');
    const r = await explain(['deploy/web', '-n', 'shop'], { client: c });
    expect(r.code).toBe(EXIT.finding);
    expect(r.stdout).toContain('Deployment shop/web (UPDATE):\n');
    expect(r.stdout).toContain('  shop/team [Patch, tier 0]: matched\n');
    expect(r.stdout).toContain('    patch: add /metadata/labels/team = "platform"\n');
    // Rules of other namespaces are not listed: they cannot apply here.
    expect(r.stdout).not.toContain('other/elsewhere');
    expect(r.stdout).toMatch(
      /would be patched \(matched: shop\/team\):\n {2}add \/metadata\/labels\/team = "platform"\n$/,
    );
    // Read-only.
    expect(c.requests.filter((q) => q.method !== 'GET')).toEqual([]);
  });

  it('a DryRun rule: what enforcing it would do, what its status recorded, and nothing would change; exit 0', async () => {
    const c = cluster('nginx:1.25');
    const rule = c.get('modrules', 'shop', 'team')!;
    c.put({
      ...rule,
      spec: { ...(rule.spec as JsonObject), enforcementAction: 'DryRun' },
      status: {
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Valid', message: 'in effect' },
          {
            type: 'NotEnforced',
            status: 'True',
            reason: 'DryRun',
            message: 'DryRun: would have patched 7 objects',
          },
        ],
      },
    });
    const r = await explain(['deploy/web', '-n', 'shop'], { client: c });
    expect(r.code).toBe(EXIT.ok);
    expect(r.stdout).toContain('note: ModRule shop/team: DryRun: would have patched 7 objects\n');
    expect(r.stdout).toContain('  shop/team [Patch, tier 0, DryRun]: matched\n');
    expect(r.stdout).toContain('    not enforced (DryRun): the object is admitted as it is;');
    expect(r.stdout).toContain('    patch: add /metadata/labels/team = "platform"\n');
    expect(r.stdout).toMatch(
      /shop\/team \(DryRun, not enforced\) would patch: add \/metadata\/labels\/team\nnothing would change\n$/,
    );
    const json = JSON.parse(
      (await explain(['deploy/web', '-n', 'shop', '-o', 'json'], { client: c })).stdout,
    );
    expect(json.unenforced).toEqual([
      { rule: 'shop/team', mode: 'DryRun', summary: 'would patch: add /metadata/labels/team' },
    ]);
    expect(json.explanation.rules.find((x: JsonObject) => x.rule === 'shop/team').mode).toBe('DryRun');
  });

  it('uses the Namespace the webhook would inject: a cluster-wide rule selecting it by label rejects', async () => {
    const r = await explain(['deployments.apps', 'web', '-n', 'shop', '-o', 'json'], {
      client: cluster('nginx:latest', { team: 'a' }),
    });
    expect(r.code).toBe(EXIT.finding);
    const result = JSON.parse(r.stdout) as JsonObject;
    expect(result).toMatchObject({
      object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' },
      operation: 'UPDATE',
      verdict: 'reject',
      message: 'operation rejected by the following ModRule(s): kubemod-system/no-latest: "web runs :latest"',
    });
    // The same object in a namespace the selector does not pick: nothing would change.
    const calm = await explain(['deployment/web', '-n', 'shop'], {
      client: cluster('nginx:latest', { team: 'a' }, 'dev'),
    });
    expect(calm.code).toBe(EXIT.ok);
    expect(calm.stdout).toContain('targetNamespaceSelector does not select namespace shop');
    expect(calm.stdout.endsWith('nothing would change\n')).toBe(true);
  });

  it('takes --rules files instead of the cluster rules, and shows the record the object carries', async () => {
    const c = cluster('nginx:1.25', { team: 'a' });
    const live = await c.request('GET', '/apis/apps/v1/namespaces/shop/deployments/web');
    (live.metadata as JsonObject).annotations = { 'modrule.io/patched-by': 'shop/team' };
    c.put({ ...live, apiVersion: 'apps/v1', kind: 'Deployment' });
    const file = writeRule('tier', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Deployment' }],
      patch: [{ op: 'add', path: '/metadata/labels/tier', value: 'web' }],
    });
    const r = await explain(['deploy/web', '-n', 'shop', '--rules', file], { client: c });
    expect(r.stdout).toContain('  shop/tier [Patch, tier 0]: matched\n');
    expect(r.stdout).not.toContain('shop/team [');
    expect(r.stdout).toContain('recorded (modrule.io/patched-by): shop/team\n');
  });

  it('names what it cannot find: a type, an object; a cluster it cannot reach is bad input too', async () => {
    await expect(explain(['widget/x'], { client: cluster('a') })).rejects.toThrow(
      `the server doesn't have a resource type "widget"`,
    );
    await expect(explain(['deploy/nope', '-n', 'shop'], { client: cluster('a') })).rejects.toThrow(
      'Deployment shop/nope not found',
    );
    const down = cluster('a');
    down.hooks.push(() => {
      throw new KubeApiError('connect ECONNREFUSED', 0, '');
    });
    await expect(explain(['deploy/web'], { client: down })).rejects.toThrow(/cannot reach the API server/);
    await expect(explain(['deploy'], { client: down })).rejects.toThrow(/name one object/);
    const forbidden = cluster('a');
    forbidden.hooks.push((req) => {
      if (req.path.endsWith('/deployments/web'))
        throw new KubeApiError('403 Forbidden: no get', 403, 'Forbidden');
    });
    await expect(explain(['deploy/web', '-n', 'shop'], { client: forbidden })).rejects.toThrow(
      new UsageError('the API server answered: 403 Forbidden: no get'),
    );
  });

  it('explains with what it may read, saying what it could not (a tenant cannot list kubemod-system)', async () => {
    const c = cluster('nginx:1.25');
    c.hooks.push((req) => {
      if (req.path.includes('/namespaces/kubemod-system/modrules'))
        throw new KubeApiError('403 Forbidden', 403, 'Forbidden');
    });
    const r = await explain(['deploy/web', '-n', 'shop'], { client: c });
    expect(r.stdout).toMatch(
      /^note: cannot list the ModRules of namespace kubemod-system \(403 Forbidden\): explained without them\n/,
    );
    expect(r.code).toBe(EXIT.finding);
  });
});
