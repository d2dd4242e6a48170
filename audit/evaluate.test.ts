import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { JsonObject } from '../util/json';
import { parseManifestObjects } from '../util/yaml';
import { loadFixture } from '../fixtures/load';
import { storeFromYaml } from '../engine/testing';
import { CLUSTER_SCOPED_KINDS, run as applyCommand } from '../cli/apply';
import { runCommand } from '../cli/testing';
import { auditObject } from './evaluate';
import { ReportBuilder } from './report';
import { ListableResource } from './types';
import { deploymentChain } from '../fixtures/owners';
import { referencesFrom } from '../store/references';
import { RuleStore } from '../store/rules';
import { WITHHELD } from '../engine/outcome';

const DEPLOYMENTS: ListableResource = {
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  kind: 'Deployment',
  namespaced: true,
  verbs: ['get', 'list', 'patch'],
};

/** The served resource an object of a manifest comes from. */
function resourceOf(obj: JsonObject): ListableResource {
  const [group, version] = String(obj.apiVersion).includes('/')
    ? String(obj.apiVersion).split('/')
    : ['', String(obj.apiVersion)];
  const kind = String(obj.kind);
  return {
    group,
    version,
    kind,
    resource: `${kind.toLowerCase()}s`,
    namespaced: !CLUSTER_SCOPED_KINDS.has(kind),
    verbs: ['list'],
  };
}

function deployment(name: string, labels: Record<string, string> = {}): JsonObject {
  const d = loadFixture('deployment');
  const meta = d.metadata as JsonObject;
  meta.name = name;
  meta.namespace = 'shop';
  meta.labels = { ...(meta.labels as JsonObject), ...labels };
  // As `kubectl create` leaves it: no last-applied-configuration (which the rules would patch too).
  delete meta.annotations;
  return d;
}

const rule = (name: string, spec: string, namespace = 'shop') =>
  `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`;

const LABEL_TEAM = rule(
  'team',
  `  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]`,
);
const LABEL_TIER = rule(
  'tier',
  `  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/tier, value: web}]`,
);

describe('auditObject', () => {
  it('agrees with `modrule apply --operation UPDATE` on every example suite (patches and rejections)', async () => {
    const root = join(__dirname, '..', 'examples');
    const suites = [
      ...readdirSync(join(root, 'kubemod')).map((d) => join(root, 'kubemod', d)),
      join(root, 'testing'),
      // Pod rules reaching controllers, and image references: the variants as the audit replays them.
      join(root, 'pod-controllers'),
      join(root, 'images'),
    ];
    let compared = 0;
    const verdicts = new Set<string>();
    for (const dir of suites) {
      const suite = parse(readFileSync(join(dir, 'modrule-test.yaml'), 'utf8')) as JsonObject;
      const files = (list: unknown) =>
        ((list ?? []) as Array<string | JsonObject>).map((f) =>
          join(dir, typeof f === 'string' ? f : String(f.file)),
        );
      const rules = files(suite.rules);
      const cluster = files(suite.cluster);
      for (const file of files(suite.resources)) {
        const args = [
          '--rules',
          ...rules,
          '--file',
          file,
          '--old',
          file,
          '--operation',
          'UPDATE',
          '--output',
          'json',
        ];
        for (const c of cluster) args.push('--cluster', c);
        const offline = JSON.parse((await runCommand(applyCommand, args)).stdout) as JsonObject[];
        const store = storeFromYaml(
          rules.map((r) => readFileSync(r, 'utf8')),
          {
            cluster: cluster.flatMap((c) => parseManifestObjects(readFileSync(c, 'utf8'))),
          },
        );
        const objects = parseManifestObjects(readFileSync(file, 'utf8'));
        objects.forEach((obj, i) => {
          const resource = resourceOf(obj);
          const meta = obj.metadata as JsonObject;
          if (resource.namespaced) meta.namespace ??= 'default';
          const audit = auditObject(obj, resource, { snapshot: store.snapshot() });
          const want = offline[i];
          const verdict = audit?.verdict ?? 'pass';
          verdicts.add(verdict);
          if (!want.allowed) {
            expect(verdict).toBe('reject');
            expect(audit?.message).toContain(String(want.message).split(':')[0]);
          } else {
            expect(audit?.patch ?? []).toEqual(want.patch);
            expect(['patch', 'pass', 'error']).toContain(verdict);
          }
          compared++;
        });
      }
    }
    expect(compared).toBeGreaterThan(15);
    expect([...verdicts].sort()).toEqual(['pass', 'patch', 'reject']);
  });

  it('names only the rules whose changes are in the patch: a rule the object already satisfies passes', () => {
    const store = storeFromYaml([LABEL_TEAM, LABEL_TIER]);
    const audit = auditObject(deployment('web', { team: 'platform' }), DEPLOYMENTS, {
      snapshot: store.snapshot(),
    })!;
    expect(audit.verdict).toBe('patch');
    expect(audit.patch).toEqual([{ op: 'add', path: '/metadata/labels/tier', value: 'web' }]);
    expect(audit.rules.map((r) => [r.rule.name, r.verdict])).toEqual([
      ['team', 'pass'],
      ['tier', 'patch'],
    ]);
    const inLine = auditObject(deployment('web', { team: 'platform', tier: 'web' }), DEPLOYMENTS, {
      snapshot: store.snapshot(),
    })!;
    expect(inLine.verdict).toBe('pass');
    expect(inLine.rules.every((r) => r.verdict === 'pass')).toBe(true);
  });

  it('credits a rule of a later tier that only matches what an earlier tier wrote', () => {
    const store = storeFromYaml([
      LABEL_TEAM,
      rule(
        'after-team',
        `  type: Patch
  executionTier: 5
  match: [{select: '$.metadata.labels.team', matchValue: platform}]
  patch: [{op: add, path: /metadata/annotations/owner, value: platform-team}]`,
      ),
    ]);
    const audit = auditObject(deployment('web'), DEPLOYMENTS, { snapshot: store.snapshot() })!;
    expect(audit.rules.map((r) => [r.rule.name, r.verdict])).toEqual([
      ['team', 'patch'],
      ['after-team', 'patch'],
    ]);
  });

  it('reports a rejection with KubeMod`s message, and the Patch rules that would have changed the object', () => {
    const store = storeFromYaml([
      LABEL_TEAM,
      rule(
        'no-nginx',
        `  type: Reject
  rejectMessage: 'no nginx here'
  match: [{select: '$.spec.template.spec.containers[*].image', matchRegex: nginx}]`,
      ),
    ]);
    const audit = auditObject(deployment('web'), DEPLOYMENTS, { snapshot: store.snapshot() })!;
    expect(audit.verdict).toBe('reject');
    expect(audit.patch).toEqual([]);
    expect(audit.message).toBe(
      'operation rejected by the following ModRule(s): shop/no-nginx: "no nginx here"',
    );
    expect(audit.rules.map((r) => [r.rule.name, r.verdict, r.message])).toEqual([
      ['no-nginx', 'reject', 'no nginx here'],
      ['team', 'patch', undefined],
    ]);
  });

  it('leaves out objects in ignored namespaces, and rules that cannot reach the object or never run on UPDATE', () => {
    const createOnly = rule(
      'create-only',
      `  type: Patch
  admissionOperations: [CREATE]
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/x, value: y}]`,
    );
    const services = rule(
      'services',
      `  type: Patch
  match: [{select: '$.kind', matchValue: Service}]
  patch: [{op: add, path: /metadata/labels/x, value: y}]`,
    );
    const ignored = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'shop', labels: { 'admission.kubemod.io/ignore': 'true' } },
    };
    expect(
      auditObject(deployment('web'), DEPLOYMENTS, {
        snapshot: storeFromYaml([LABEL_TEAM], { cluster: [ignored] }).snapshot(),
      }),
    ).toBeUndefined();
    const store = storeFromYaml([LABEL_TEAM, createOnly, services]);
    const audit = auditObject(deployment('web'), DEPLOYMENTS, { snapshot: store.snapshot() })!;
    expect(audit.rules.map((r) => r.rule.name)).toEqual(['team']);
    expect(
      auditObject(deployment('web'), DEPLOYMENTS, { snapshot: storeFromYaml([services]).snapshot() }),
    ).toBe(undefined);
  });

  it('reports an object too big for the webhook as not evaluated, as the webhook would answer 413', () => {
    const store = storeFromYaml([LABEL_TEAM]);
    const big = deployment('big');
    (big.metadata as JsonObject).annotations = { blob: 'x'.repeat(600_000) };
    const audit = auditObject(big, DEPLOYMENTS, { snapshot: store.snapshot(), maxBodyBytes: 1024 * 1024 })!;
    expect(audit.verdict).toBe('error');
    expect(audit.patch).toEqual([]);
    expect(audit.message).toMatch(/about 1\.1 MiB, over the webhook's 1\.0 MiB body limit/);
    expect(audit.rules).toEqual([expect.objectContaining({ verdict: 'error', message: audit.message })]);
    expect(audit.rules[0].rule).toEqual({ namespace: 'shop', name: 'team' });
    // Ignored namespaces stay out, big objects or not.
    const ignored = storeFromYaml([LABEL_TEAM], {
      cluster: [
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: 'shop', labels: { 'admission.kubemod.io/ignore': 'true' } },
        },
      ],
    });
    expect(
      auditObject(big, DEPLOYMENTS, { snapshot: ignored.snapshot(), maxBodyBytes: 1024 * 1024 }),
    ).toBeUndefined();
    // The default limit (8 MiB) takes it.
    expect(auditObject(big, DEPLOYMENTS, { snapshot: store.snapshot() })!.verdict).toBe('patch');
  });

  it('evaluates with the namespace manifest as syntheticRefs, as the webhook does', () => {
    const store = storeFromYaml(
      [
        rule(
          'copy-env',
          `  type: Patch
  match: [{select: '$.syntheticRefs.namespace.metadata.labels.env'}]
  patch: [{op: add, path: /metadata/labels/env, value: '{{ .Target.syntheticRefs.namespace.metadata.labels.env }}'}]`,
        ),
      ],
      {
        cluster: [
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { env: 'prod' } } },
        ],
      },
    );
    const audit = auditObject(deployment('web'), DEPLOYMENTS, { snapshot: store.snapshot() })!;
    expect(audit.patch).toEqual([{ op: 'add', path: '/metadata/labels/env', value: 'prod' }]);
  });

  it('reports a rule that fails at run time on the object as error, not pass, beside another rule that patches', () => {
    const DIVIDES = rule(
      'divides',
      `  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/ratio, value: '{{ div 1 0 }}'}]`,
    );
    const alone = auditObject(deployment('web'), DEPLOYMENTS, {
      snapshot: storeFromYaml([DIVIDES]).snapshot(),
    })!;
    expect(alone.verdict).toBe('error');
    expect(alone.rules).toEqual([
      expect.objectContaining({ verdict: 'error', message: expect.stringMatching(/divide by zero/) }),
    ]);
    const both = auditObject(deployment('web'), DEPLOYMENTS, {
      snapshot: storeFromYaml([DIVIDES, LABEL_TEAM]).snapshot(),
    })!;
    expect(both.verdict).toBe('patch');
    expect(both.rules.map((r) => [r.rule.name, r.verdict])).toEqual([
      ['divides', 'error'],
      ['team', 'patch'],
    ]);
    // And the report says error for it.
    const builder = new ReportBuilder();
    builder.add(both);
    const report = builder.report('openreports', 'shop', new Date(0))!;
    expect((report.results as JsonObject[]).map((r) => [r.rule, r.result])).toEqual([
      ['team', 'fail'],
      ['divides', 'error'],
    ]);
    expect(report.summary).toMatchObject({ error: 1, fail: 1, pass: 0 });
  });

  it('reports a rule the webhook skips (quarantined) as error, as the webhook would not apply it', () => {
    const store = storeFromYaml([LABEL_TEAM]);
    const quarantined = (r: { name: string }) =>
      r.name === 'team'
        ? 'quarantined until 2026-11-23T10:00:00Z on this replica: ran out of its share'
        : null;
    const audit = auditObject(deployment('web'), DEPLOYMENTS, { snapshot: store.snapshot(), quarantined })!;
    expect(audit.verdict).toBe('error');
    expect(audit.patch).toEqual([]);
    expect(audit.rules).toEqual([
      expect.objectContaining({
        verdict: 'error',
        message:
          'the webhook skipped: quarantined until 2026-11-23T10:00:00Z on this replica: ran out of its share',
      }),
    ]);
  });
});

describe('auditObject with references', () => {
  const REPLICASETS: ListableResource = { ...DEPLOYMENTS, resource: 'replicasets', kind: 'ReplicaSet' };
  const chain = deploymentChain('shop');

  test('rules read owners and named objects from the reader given; without one they are absent', () => {
    const store = storeFromYaml(
      rule(
        'owner-team',
        `  type: Patch
  match: [{select: '$.syntheticRefs.owner.metadata.labels.team'}]
  patch: [{op: add, path: /metadata/labels/team, value: '{{ .Target.syntheticRefs.owner.metadata.labels.team }}'}]`,
      ),
    );
    const snapshot = store.snapshot();
    const references = referencesFrom([chain.deployment]);
    expect(auditObject(chain.replicaSet, REPLICASETS, { snapshot, references })).toMatchObject({
      verdict: 'patch',
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'payments' }],
    });
    expect(auditObject(chain.replicaSet, REPLICASETS, { snapshot })?.verdict).toBe('pass');
  });

  test('a rule reading a Secret: its rejection message stays out of the report', () => {
    const store = new RuleStore({ references: { allowSecrets: true } });
    store.upsertRule(
      parse(
        rule(
          'no-token',
          `  type: Reject
  references: [{name: token, apiVersion: v1, kind: Secret, objectName: api}]
  match: [{select: '$.syntheticRefs.token.data.token'}]
  rejectMessage: 'token {{ .Target.syntheticRefs.token.data.token }}'`,
        ),
      ) as JsonObject,
    );
    const secret: JsonObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'api', namespace: 'shop' },
      data: { token: 'c2VjcmV0' },
    };
    const audit = auditObject(chain.replicaSet, REPLICASETS, {
      snapshot: store.snapshot(),
      references: referencesFrom([secret]),
    });
    expect(audit?.verdict).toBe('reject');
    expect(JSON.stringify(audit)).not.toContain('c2VjcmV0');
    expect(audit?.message).toContain(WITHHELD);
  });
});

describe('auditObject: Warn and DryRun rules', () => {
  const dryTeam = rule(
    'team',
    `  type: Patch
  enforcementAction: DryRun
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/team, value: platform}]`,
  );
  const warnDeny = rule(
    'no-web',
    `  type: Reject
  enforcementAction: Warn
  rejectMessage: 'no {{ .Target.metadata.name }}'
  match: [{select: '$.metadata.name', matchValue: web}]`,
  );

  it('the object stays in line; the rule says what enforcing it would change, a warn in the report', () => {
    const store = storeFromYaml([dryTeam, warnDeny, LABEL_TIER]);
    const audit = auditObject(deployment('web'), DEPLOYMENTS, { snapshot: store.snapshot() })!;
    // The webhook would apply only the enforced rule.
    expect(audit.verdict).toBe('patch');
    expect(audit.patch).toEqual([{ op: 'add', path: '/metadata/labels/tier', value: 'web' }]);
    expect(audit.rules).toEqual([
      {
        rule: { namespace: 'shop', name: 'no-web' },
        type: 'Reject',
        verdict: 'reject',
        message: 'no web',
        mode: 'Warn',
      },
      {
        rule: { namespace: 'shop', name: 'team' },
        type: 'Patch',
        verdict: 'patch',
        mode: 'DryRun',
        patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
      },
      { rule: { namespace: 'shop', name: 'tier' }, type: 'Patch', verdict: 'patch' },
    ]);
    const builder = new ReportBuilder();
    builder.add(audit);
    const report = builder.report('openreports', 'shop', new Date(0))!;
    expect(report.summary).toEqual({ pass: 0, fail: 1, warn: 2, error: 0, skip: 0 });
    const results = report.results as JsonObject[];
    expect(results.map((r) => [r.policy, r.result, r.message])).toEqual([
      ['shop/tier', 'fail', 'would be patched: add /metadata/labels/tier'],
      ['shop/no-web', 'warn', 'would be rejected if enforced (Warn): no web'],
      ['shop/team', 'warn', 'would be patched if enforced (DryRun): add /metadata/labels/team'],
    ]);
  });

  it('an object a DryRun rule alone would patch is in line for the webhook', () => {
    const store = storeFromYaml([dryTeam]);
    const audit = auditObject(deployment('db'), DEPLOYMENTS, { snapshot: store.snapshot() })!;
    expect(audit.verdict).toBe('pass');
    expect(audit.patch).toEqual([]);
    expect(audit.rules[0]).toMatchObject({ verdict: 'patch', mode: 'DryRun' });
  });
});
