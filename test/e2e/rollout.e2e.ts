import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';
import { KubeClient } from '../../kube/kube';
import { RunningOperator } from '../../operator/start';
import { stringifyManifests } from '../../util/yaml';
import { runCommand } from '../../cli/testing';
import { main } from '../../cli/main';
import { modRule as rule } from '../../operator/testing/objects';
import { apply, waitFor } from './cluster';
import { kubectl } from './kubectl';
import { OperatorHarness, operatorHarness } from './operator-harness';
import { describeCluster } from './target';

/*
 * Issue 38 on a real API server (target.ts): a Patch rule in DryRun leaves 100 objects unpatched while its metric,
 * its status and the background audit's report count 100; switched to Enforce, the next object is patched; a Reject
 * rule in Warn admits with kubectl's warning; two teams' rules writing one label differently both show Conflicting.
 */

const run = randomBytes(3).toString('hex');
const NS = `rollout-e2e-${run}`;
const SCOPE_LABEL = `modrule-e2e-${run}`;
const ROOT = join(__dirname, '..', '..');
const MODRULES = `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`;
const CONFIGMAPS = `/api/v1/namespaces/${NS}/configmaps`;
const REPORT = `/apis/openreports.io/v1alpha1/namespaces/${NS}/reports/modrule-audit`;
const COUNT = 100;
const measured: Record<string, string> = {};

const modRule = (name: string, spec: JsonObject): JsonObject => rule(NS, name, spec);

/** Labels ConfigMaps of the batch `batch` with team=platform, in `action` mode. */
const tagging = (action: string) =>
  modRule('tag-platform', {
    type: 'Patch',
    enforcementAction: action,
    match: [
      { select: '$.kind', matchValue: 'ConfigMap' },
      { select: '$.metadata.labels.batch', matchValue: 'rollout' },
    ],
    patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
  });

const conditions = (rule: JsonObject) =>
  ((isJsonObject(rule.status) ? rule.status.conditions : undefined) ?? []) as JsonObject[];

function yamlFile(relative: string): JsonObject[] {
  return parseAllDocuments(readFileSync(join(ROOT, relative), 'utf8'))
    .map((d) => d.toJS() as unknown)
    .filter(isJsonObject);
}

async function metric(op: RunningOperator, line: RegExp): Promise<number> {
  const text = await op.webhook.registry.metrics();
  const found = text.split('\n').find((l) => line.test(l));
  return found ? Number(found.split(' ').pop()) : NaN;
}

describeCluster(`rolling out a rule: DryRun, Warn, conflicts (namespace ${NS})`, () => {
  let h: OperatorHarness;
  let admin: KubeClient;
  let op: RunningOperator;

  beforeAll(async () => {
    const started = Date.now();
    h = await operatorHarness(SCOPE_LABEL);
    admin = h.admin;
    // The background audit writes OpenReports reports: their CRDs and the operator's RBAC for them.
    for (const obj of [
      ...yamlFile('config/reports/openreports/crds.yaml'),
      ...yamlFile('config/reports/audit-rbac/cluster_role.yaml'),
      ...yamlFile('config/reports/audit-rbac/cluster_role_binding.yaml'),
      ...yamlFile('config/reports/openreports/reports_role.yaml'),
    ])
      await h.ledger.apply(obj);
    await waitFor('reports to be served', async () => {
      await admin.request('GET', '/apis/openreports.io/v1alpha1/reports', { query: { limit: 1 } });
      return true;
    });
    await h.namespace(NS);
    op = await h.start({
      // The recent window a rule's status counts over: the whole test.
      failures: { windowMs: 10 * 60_000 },
      reports: { format: 'openreports', intervalSeconds: 5, debounceMs: 300, pageSize: 50, qps: 100 },
    });
    await waitFor('the operator to be ready', async () => op.isReady());
    measured['set-up'] = `${Date.now() - started} ms`;
  });

  afterAll(async () => {
    await h?.tearDown();
    process.stderr.write(
      `rollout e2e measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  it(`a DryRun rule leaves ${COUNT} objects unpatched; its metric, status, Event and report count ${COUNT}; Enforce patches the next`, async () => {
    await waitFor('the ModRule webhooks', async () => {
      await apply(admin, MODRULES, tagging('DryRun'));
      return true;
    });
    const t0 = Date.now();
    for (let i = 0; i < COUNT; i++) {
      const cm = await admin.request('POST', CONFIGMAPS, {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `dry-${i}`, labels: { batch: 'rollout' } },
        },
      });
      // Admitted unpatched: the API server stored it as it was sent.
      expect((cm.metadata as JsonObject).labels).toEqual({ batch: 'rollout' });
    }
    measured[`${COUNT} ConfigMaps created under a DryRun rule`] = `${Date.now() - t0} ms`;
    const series = new RegExp(
      `^modrule_rule_would_patch_total\\{namespace="${NS}",name="tag-platform",mode="DryRun"\\}`,
    );
    expect(await metric(op, series)).toBe(COUNT);
    // The rule's status: NotEnforced with the count over the recent window (updated every 10 s at most).
    const shown = await waitFor(
      'the status to count every object',
      async () => {
        const rule = await admin.request('GET', `${MODRULES}/tag-platform`);
        const c = conditions(rule).find((x) => x.type === 'NotEnforced');
        return c && String(c.message).includes(`would have patched ${COUNT} objects`) ? c : undefined;
      },
      30_000,
    );
    expect(shown).toMatchObject({
      status: 'True',
      reason: 'DryRun',
      message: expect.stringMatching(
        /Last at \S+Z on ConfigMap \S+\/dry-\d+ \(CREATE\): would patch: add \/metadata\/labels\/team\./,
      ),
    });
    const events = await waitFor('the Event', async () => {
      const list = await admin.request('GET', `/api/v1/namespaces/${NS}/events`);
      const items = ((list.items ?? []) as JsonObject[]).filter((e) => e.reason === 'ModRuleWouldPatch');
      return items.length > 0 ? items : undefined;
    });
    expect(events).toHaveLength(1); // rate-limited: one per ten minutes
    // The background audit's report: a warn per object, naming the mode.
    const results = await waitFor(
      'the report to list every object',
      async () => {
        const report = await admin.request('GET', REPORT).catch(() => undefined);
        const list = ((report?.results ?? []) as JsonObject[]).filter(
          (r) => r.policy === `${NS}/tag-platform` && r.result === 'warn',
        );
        return list.length === COUNT ? list : undefined;
      },
      60_000,
      1000,
    );
    expect(results[0].message).toBe('would be patched if enforced (DryRun): add /metadata/labels/team');
    // Switched to Enforce (one field): the next object is patched, as soon as the write returns.
    await apply(admin, MODRULES, tagging('Enforce'));
    const next = await admin.request('POST', CONFIGMAPS, {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'enforced', labels: { batch: 'rollout' } },
      },
    });
    expect((next.metadata as JsonObject).labels).toEqual({ batch: 'rollout', team: 'platform' });
  });

  it('an unknown enforcementAction is refused with the field and the allowed values', async () => {
    const err = await admin
      .request('POST', MODRULES, {
        body: { ...tagging('Audit'), metadata: { name: 'bad-action', namespace: NS } },
      })
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(err?.message).toContain(
      'spec.enforcementAction: Unsupported value: "Audit": supported values: "Enforce", "Warn", "DryRun"',
    );
  });

  it("a Reject rule in Warn admits the object with kubectl's warning", async () => {
    if (!h.cluster.kubectl) return;
    await apply(
      admin,
      MODRULES,
      modRule('no-debug', {
        type: 'Reject',
        enforcementAction: 'Warn',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.data.debug', matchValue: 'true' },
        ],
        rejectMessage: 'debug ConfigMaps are not allowed ({{ .Target.metadata.name }})',
      }),
    );
    const out = await kubectl(
      h.cluster.kubectl,
      h.cluster.kubeConfigPath,
      ['create', 'configmap', 'debugging', '-n', NS, '--from-literal=debug=true', '-o', 'name'],
      '',
    );
    expect(out.code).toBe(0);
    expect(out.stdout.trim()).toBe('configmap/debugging');
    expect(out.stderr).toContain(
      `Warning: modrule ${NS}/no-debug (Warn) would reject: debug ConfigMaps are not allowed (debugging)`,
    );
  });

  it('two rules writing one label differently in one tier: both show Conflicting, naming the other', async () => {
    const label = (name: string, value: string) =>
      modRule(name, {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'Secret' }],
        patch: [{ op: 'add', path: '/metadata/labels/owner', value }],
      });
    await apply(admin, MODRULES, label('owner-a', 'team-a'));
    await apply(admin, MODRULES, label('owner-b', 'team-b'));
    const t0 = Date.now();
    for (const [name, other] of [
      ['owner-a', 'owner-b'],
      ['owner-b', 'owner-a'],
    ])
      await waitFor(`${name} to show Conflicting`, async () => {
        const rule = await admin.request('GET', `${MODRULES}/${name}`);
        const c = conditions(rule).find((x) => x.type === 'Conflicting');
        return c?.status === 'True' && String(c.message).includes(`${NS}/${other}`) ? c : undefined;
      });
    measured['a conflict shown on both rules'] = `${Date.now() - t0} ms`;
    expect(await metric(op, /^modrule_rules_conflicting /)).toBe(2);
  });

  it('modrule export --native: a Warn Reject rule becomes a policy the API server warns with; DryRun audits silently', async () => {
    if (!h.cluster.kubectl) return;
    const rule = (name: string, action: string, key: string) =>
      modRule(name, {
        type: 'Reject',
        enforcementAction: action,
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: `$.data.${key}`, matchValue: 'true' },
        ],
        rejectMessage: `no ${key} ConfigMaps`,
      });
    const file = join(tmpdir(), `rollout-native-${run}.yaml`);
    writeFileSync(
      file,
      stringifyManifests([rule('native-warn', 'Warn', 'legacy'), rule('native-audit', 'DryRun', 'quiet')]),
    );
    const out = await runCommand((a, io) => main(['export', ...a], io), ['--native', '--rules', file]);
    expect(out.code).toBe(0);
    const objects = parseAllDocuments(out.stdout).map((d) => d.toJS() as JsonObject);
    expect(
      objects
        .filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding')
        .map((b) => (b.spec as JsonObject).validationActions),
    ).toEqual([['Warn'], ['Audit']]);
    for (const o of objects) await h.ledger.apply(o);
    // The API server's policy caches load them within moments: until then, no warning.
    let n = 0;
    const warned = await waitFor('the policy to warn', async () => {
      const r = await kubectl(
        h.cluster.kubectl!,
        h.cluster.kubeConfigPath,
        ['create', 'configmap', `legacy-${n++}`, '-n', NS, '--from-literal=legacy=true', '-o', 'name'],
        '',
      );
      expect(r.code).toBe(0);
      return /Warning: Validation failed for ValidatingAdmissionPolicy/.test(r.stderr) ? r.stderr : undefined;
    });
    expect(warned).toContain('no legacy ConfigMaps');
    const quiet = await kubectl(
      h.cluster.kubectl,
      h.cluster.kubeConfigPath,
      ['create', 'configmap', 'quiet', '-n', NS, '--from-literal=quiet=true', '-o', 'name'],
      '',
    );
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
  });
});
