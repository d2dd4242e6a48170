import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { compileModRule } from '../rule/compile';
import { AdmissionOperation, ModRule } from '../rule/types';
import { RuleStore } from '../store/rules';
import { admit, AdmissionInput, AdmissionOutcome } from './admit';
import { AdmissionExplanation, explainAdmission, MAX_LISTED_RESULTS, RuleExplanation } from './explain';
import { storeFromYaml } from './testing';
import { deploymentChain } from '../fixtures/owners';
import { referencesFrom } from '../store/references';

const yamlDocs = (text: string): JsonObject[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as JsonObject | null)
    .filter((d): d is JsonObject => d !== null);

function compiledOf(rules: string, namespace = 'default'): ReturnType<typeof compileModRule>[] {
  return yamlDocs(rules).map((r) => {
    (r.metadata as JsonObject).namespace ??= namespace;
    return compileModRule(r as unknown as ModRule);
  });
}

const ref = (r: { namespace: string; name: string }): string => `${r.namespace}/${r.name}`;

/** The verdicts admit() reports, read back from an explanation. */
function verdictsOf(e: AdmissionExplanation): {
  matched: string[];
  patched: string[];
  failures: string[];
  rejections: string[];
} {
  const matched = e.rules.filter((r) => r.status === 'matched');
  const patch = matched.filter((r) => r.type === 'Patch');
  const reject = matched.filter((r) => r.type === 'Reject');
  return {
    // admit() lists Patch rules (tier order) before Reject rules.
    matched: [...patch, ...reject].map((r) => r.rule),
    patched: patch.filter((r) => !r.error).map((r) => r.rule),
    failures: [...patch, ...reject].filter((r) => r.error).map((r) => r.rule),
    rejections: reject.map((r) => r.rule),
  };
}

function outcomeVerdicts(o: AdmissionOutcome): ReturnType<typeof verdictsOf> {
  return {
    matched: o.matched.map(ref),
    patched: o.patched.map(ref),
    failures: o.failures.map((f) => ref(f.rule)),
    rejections: o.rejections.map((r) => ref(r.rule)),
  };
}

function both(
  store: RuleStore,
  rules: ReturnType<typeof compileModRule>[],
  input: AdmissionInput,
): { outcome: AdmissionOutcome; explanation: AdmissionExplanation } {
  const snapshot = store.snapshot();
  return { outcome: admit(input, snapshot), explanation: explainAdmission(input, snapshot, rules) };
}

const create = (object: JsonObject, namespace: string | null = 'default'): AdmissionInput => ({
  operation: 'CREATE',
  object,
  oldObject: null,
  namespace,
});

const byName = (e: AdmissionExplanation, name: string): RuleExplanation => {
  const r = e.rules.find((x) => x.rule.endsWith(`/${name}`));
  if (!r) throw new Error(`no rule ${name} in ${e.rules.map((x) => x.rule).join(', ')}`);
  return r;
};

// The explanation is only worth something if it says what admit() did: check that on every shipped example.
describe('explainAdmission agrees with admit()', () => {
  const EXAMPLES = join(__dirname, '..', 'examples', 'kubemod');
  const names = readdirSync(EXAMPLES).filter((n) => existsSync(join(EXAMPLES, n, 'modrule.yaml')));

  test.each(names)('%s', (name) => {
    const dir = join(EXAMPLES, name);
    const rulesText = readFileSync(join(dir, 'modrule.yaml'), 'utf8');
    const cluster = existsSync(join(dir, 'cluster.yaml'))
      ? yamlDocs(readFileSync(join(dir, 'cluster.yaml'), 'utf8'))
      : [];
    const store = storeFromYaml(rulesText, { cluster });
    const args = existsSync(join(dir, 'args.txt')) ? readFileSync(join(dir, 'args.txt'), 'utf8') : '';
    const operation = (/--operation (\w+)/.exec(args)?.[1] ?? 'CREATE') as AdmissionOperation;
    const [object] = yamlDocs(readFileSync(join(dir, 'input.yaml'), 'utf8'));
    const { outcome, explanation } = both(store, compiledOf(rulesText), {
      operation,
      object,
      oldObject: null,
      namespace: 'default',
    });
    expect(verdictsOf(explanation)).toEqual(outcomeVerdicts(outcome));
  });

  test('tiers, failures, rejections of the patched object, and DELETE', () => {
    const rules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: t0-label}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: add, path: /metadata/labels/stage, value: one}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: t1-needs-stage}
spec:
  type: Patch
  executionTier: 1
  match: [{select: '$.metadata.labels.stage', matchValue: one}]
  patch: [{op: add, path: /metadata/labels/stage2, value: two}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: t0-needs-stage}
spec:
  type: Patch
  match: [{select: '$.metadata.labels.stage', matchValue: one}]
  patch: [{op: add, path: /metadata/labels/never, value: x}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: broken}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Deployment}]
  patch: [{op: replace, path: /spec/nothing/here, value: x}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: reject-stage2}
spec:
  type: Reject
  admissionOperations: [CREATE, DELETE]
  rejectMessage: 'stage2 is {{ .Target.metadata.labels.stage2 }}'
  match: [{select: '$.metadata.labels.stage2', matchValue: two}]
`;
    const store = storeFromYaml(rules);
    const compiled = compiledOf(rules);
    const deployment = loadFixture('deployment');
    for (const input of [
      create(deployment),
      { operation: 'DELETE' as const, object: null, oldObject: deployment, namespace: 'default' },
      { operation: 'UPDATE' as const, object: deployment, oldObject: deployment, namespace: 'default' },
    ]) {
      const { outcome, explanation } = both(store, compiled, input);
      expect(verdictsOf(explanation)).toEqual(outcomeVerdicts(outcome));
    }
    const { explanation } = both(store, compiled, create(deployment));
    // Tier 0 rules see the tier's input: the label added in tier 0 is not there yet for t0-needs-stage.
    expect(byName(explanation, 't0-needs-stage').status).toBe('not-matched');
    expect(byName(explanation, 't1-needs-stage').status).toBe('matched');
    expect(byName(explanation, 'broken').error).toMatch(/^replace \/spec\/nothing\/here: /);
    expect(byName(explanation, 'reject-stage2').rejectMessage).toBe('stage2 is two');
    const onUpdate = both(store, compiled, {
      operation: 'UPDATE',
      object: deployment,
      oldObject: deployment,
      namespace: 'default',
    }).explanation;
    expect(byName(onUpdate, 'reject-stage2')).toMatchObject({
      status: 'out-of-scope',
      reason: 'admissionOperations [CREATE, DELETE] does not include UPDATE',
    });
  });
});

describe('explainAdmission with references', () => {
  test('rules see their own references, as in admit(); each reference is listed found or absent', () => {
    const rules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: owner-team, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team'}]
  patch: [{op: add, path: /metadata/labels/team, value: '{{ .Target.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team }}'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: needs-quota, namespace: shop}
spec:
  type: Reject
  references: [{name: quota, apiVersion: v1, kind: ConfigMap, objectName: quota}]
  match: [{select: '$.kind', matchValue: Pod}, {select: '$.syntheticRefs.quota', negate: true}]
  rejectMessage: 'no quota ConfigMap in {{ .Namespace }}'
`;
    const { deployment, replicaSet, pod } = deploymentChain('shop');
    const store = storeFromYaml(rules);
    const snapshot = store.snapshot();
    const refs = referencesFrom([deployment, replicaSet]);
    const input = create(pod, 'shop');
    const outcome = admit(input, snapshot, undefined, { references: refs });
    const explanation = explainAdmission(input, snapshot, compiledOf(rules), refs);
    expect(verdictsOf(explanation)).toEqual(outcomeVerdicts(outcome));
    expect(outcome.patched.map(ref)).toEqual(['shop/owner-team']);
    expect(outcome.rejections.map((r) => r.message)).toEqual(['no quota ConfigMap in shop']);
    expect(byName(explanation, 'owner-team').references).toEqual([
      { name: 'owner', target: 'the controlling owner, 2 level(s)', found: 2 },
    ]);
    expect(byName(explanation, 'needs-quota').references).toEqual([
      { name: 'quota', target: 'ConfigMap shop/quota', found: false },
    ]);
  });
});

describe('explainAdmission details', () => {
  const rules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: images}
spec:
  type: Patch
  match:
    - select: '$.kind'
      matchValue: Deployment
    - select: '$.spec.template.spec.containers[*].image'
      matchRegex: '^nginx:'
      matchFor: All
    - select: '$.metadata.labels.app'
      matchValue: nginx
  patch:
    - op: add
      select: '$.spec.template.spec.containers[*]'
      path: /spec/template/spec/containers/#0/imagePullPolicy
      value: Always
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: ports}
spec:
  type: Patch
  match:
    - select: '$..containerPort'
    - select: '$.spec.template.spec.securityContext.runAsNonRoot == true'
      negate: true
  patch:
    - op: add
      select: '$.spec.template.spec.containers[*]'
      path: /spec/template/spec/containers/#0/securityContext
      value: '{runAsNonRoot: true}'
`;

  test('every item with its results, compared values, matchFor and negate; the first failing item', () => {
    // The fixture runs nginx and a log shipper: not every image is nginx.
    const d = loadFixture('deployment');
    const { explanation } = both(storeFromYaml(rules), compiledOf(rules), create(d));
    const images = byName(explanation, 'images');
    expect(images.status).toBe('not-matched');
    expect(images.items.map((i) => i.matched)).toEqual([true, false, true]);
    expect(images.items[1]).toMatchObject({
      select: '$.spec.template.spec.containers[*].image',
      compare: { matchRegex: '^nginx:' },
      matchFor: 'All',
      negate: false,
      resultCount: 2,
      results: [
        { path: '/spec/template/spec/containers/0/image', value: 'nginx:1.14.2' },
        { path: '/spec/template/spec/containers/1/image', value: 'their-repo/log-shipper:2.1' },
      ],
      reason: '1 of 2 values matched, matchFor All needs every one',
    });
    expect(images.operations).toBeUndefined();
  });

  test('resolved operations with placeholders filled; results listed up to the limit', () => {
    const d = loadFixture('deployment');
    const spec = ((d.spec as JsonObject).template as JsonObject).spec as JsonObject;
    spec.containers = Array.from({ length: 7 }, (_, i) => ({
      name: `c${i}`,
      image: 'nginx:1.25',
      ports: [{ containerPort: 8000 + i }],
    }));
    const { explanation } = both(storeFromYaml(rules), compiledOf(rules), create(d));
    const ports = byName(explanation, 'ports');
    expect(ports.status).toBe('matched');
    expect(ports.items[0].resultCount).toBe(7);
    expect(ports.items[0].results).toHaveLength(MAX_LISTED_RESULTS);
    expect(ports.items[1]).toMatchObject({
      negate: true,
      matched: true,
      results: [{ path: null, value: false }],
    });
    expect(ports.operations?.map((o) => o.path)).toEqual(
      Array.from({ length: 7 }, (_, i) => `/spec/template/spec/containers/${i}/securityContext`),
    );
    expect(ports.operations?.[0].value).toEqual({ runAsNonRoot: true });
    expect(byName(explanation, 'images').operations?.[6]).toEqual({
      op: 'add',
      path: '/spec/template/spec/containers/6/imagePullPolicy',
      value: 'Always',
    });
  });

  test('rules out of scope say why, in one line each', () => {
    const scoped = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: elsewhere, namespace: other}
spec: {type: Reject, match: [{select: '$.kind'}]}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: prod-only, namespace: kubemod-system}
spec: {type: Reject, targetNamespaceRegex: '^prod-', match: [{select: '$.kind'}]}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: cluster-only, namespace: kubemod-system}
spec: {type: Reject, match: [{select: '$.kind'}]}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: deletes, namespace: default}
spec: {type: Reject, admissionOperations: [DELETE], match: [{select: '$.kind'}]}
`;
    const { explanation, outcome } = both(
      storeFromYaml(scoped),
      compiledOf(scoped),
      create(loadFixture('pod')),
    );
    expect(outcome.allowed).toBe(true);
    expect(explanation.rules.map((r) => [r.rule, r.status, r.reason])).toEqual([
      ['default/deletes', 'out-of-scope', 'admissionOperations [DELETE] does not include CREATE'],
      [
        'kubemod-system/cluster-only',
        'out-of-scope',
        'a cluster-wide rule without targetNamespaceRegex applies to cluster-scoped objects only',
      ],
      [
        'kubemod-system/prod-only',
        'out-of-scope',
        'targetNamespaceRegex "^prod-" does not match namespace default',
      ],
      ['other/elsewhere', 'out-of-scope', 'the rule is in namespace other, the object in default'],
    ]);

    // A cluster-scoped object: only cluster-wide rules whose regex (if any) matches "" apply.
    const clusterWide = both(storeFromYaml(scoped), compiledOf(scoped), create(loadFixture('node'), null));
    expect(verdictsOf(clusterWide.explanation)).toEqual(outcomeVerdicts(clusterWide.outcome));
    expect(clusterWide.explanation.rules.map((r) => [r.rule, r.status, r.reason])).toEqual([
      [
        'default/deletes',
        'out-of-scope',
        'the rule is in namespace default, the object in none (cluster-scoped)',
      ],
      ['kubemod-system/cluster-only', 'matched', undefined],
      [
        'kubemod-system/prod-only',
        'out-of-scope',
        'targetNamespaceRegex "^prod-" does not match "" (cluster-scoped objects)',
      ],
      [
        'other/elsewhere',
        'out-of-scope',
        'the rule is in namespace other, the object in none (cluster-scoped)',
      ],
    ]);

    const ns = loadFixture('namespace');
    (ns.metadata as JsonObject).labels = { 'admission.kubemod.io/ignore': 'true' };
    const ignoring = storeFromYaml(scoped, { cluster: [ns] });
    const both2 = both(ignoring, compiledOf(scoped), create(loadFixture('pod')));
    expect(both2.outcome.ignored).toBe(true);
    const ignored = both2.explanation;
    expect(ignored.ignored).toBe('namespace default is labelled admission.kubemod.io/ignore=true');
    expect(ignored.rules.every((r) => r.status === 'out-of-scope' && r.reason === ignored.ignored)).toBe(
      true,
    );
  });
});
