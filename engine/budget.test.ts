import { JsonObject } from '../util/json';
import { RequestBudget } from '../util/budget';
import { admit } from './admit';
import { storeFromYaml } from './testing';

// Issue 12: a tenant's expensive Patch rules must not use up the budget the cluster's Reject rules need, and a
// Reject rule the budget cannot pay for rejects (fail closed) instead of letting the object through.
// Issue 24: each rule also has its own share (a tenth of the budget), so what exhausts the request here is many
// moderately expensive rules together, each within its share.

// Moderately expensive but valid Patch rules in the tenant's own namespace: ~80k template steps each, under a
// rule's share (100k of the 1M budget); ten of them are more than the Patch rules' 750k.
const spins = (count: number) =>
  Array.from(
    { length: count },
    (_, i) => `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: spin-${i}, namespace: evil}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch: [{op: add, path: /metadata/annotations/spin-${i}, value: '{{ range until 40000 }}{{ end }}x'}]
`,
  ).join('---\n');
const hostilePatches = spins(10);

// A cluster-wide policy from kubemod-system that the tenant's ConfigMap breaks (no owner label).
const clusterReject = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: require-owner, namespace: kubemod-system}
spec:
  type: Reject
  targetNamespaceRegex: '.*'
  rejectMessage: 'ConfigMap {{ .Target.metadata.name }} has no owner label'
  match:
    - {select: '$.kind', matchValue: ConfigMap}
    - {select: '$.metadata.labels.owner', negate: true}
`;

const configMap: JsonObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings', namespace: 'evil' },
  data: { a: '1' },
};

function admitWith(rules: string, budget: RequestBudget, object: JsonObject = configMap) {
  return admit(
    { operation: 'CREATE', object, oldObject: null, namespace: 'evil' },
    storeFromYaml(rules).snapshot(),
    budget,
  );
}

describe('Reject rules under the request budget', () => {
  test("a tenant's expensive Patch rules cannot starve a cluster-wide Reject rule: the object is rejected", () => {
    const budget = new RequestBudget({ steps: 1_000_000, ms: 60_000 });
    const out = admitWith(hostilePatches + '---\n' + clusterReject, budget);
    expect(out.allowed).toBe(false);
    expect(out.rejections).toEqual([
      {
        rule: { namespace: 'kubemod-system', name: 'require-owner' },
        message: 'ConfigMap settings has no owner label',
      },
    ]);
    // The Patch rules ran out of their part together (none of them alone), and say so.
    expect(out.failures.map((f) => f.rule.name)).toContain('spin-9');
    expect(out.failures[0].message).toMatch(/request budget exhausted: Patch rules used more than 750000 of/);
    expect(out.overBudget).toEqual([]);
    expect(budget.exhausted).toMatch(/request budget exhausted/);
  });

  test('the same holds when the time, not the steps, runs out', () => {
    let t = 0;
    // Every clock read moves time on by 1 ms of CPU time: the Patch rules use up their 75 ms long before their
    // steps. Rules have no share of time here, so none runs out by itself.
    const budget = new RequestBudget(
      { steps: 1e12, ms: 100 },
      { now: () => t++, cpu: () => t },
      { steps: 1e11, ms: Infinity },
    );
    const out = admitWith(hostilePatches + '---\n' + clusterReject, budget);
    expect(out.allowed).toBe(false);
    expect(out.rejections.map((r) => r.message)).toEqual(['ConfigMap settings has no owner label']);
    expect(out.failures[0].message).toMatch(/Patch rules took more than 75 of 100 ms of CPU time/);
  });

  test('Reject rules the budget cannot pay for reject, naming themselves and the budget', () => {
    // The tenant's own Reject rules (sorted before kubemod-system: "evil" < "kubemod-system") eat the reserve
    // together, each within its share.
    const costlyChecks = Array.from(
      { length: 4 },
      (_, i) => `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: costly-check-${i}, namespace: evil}
spec:
  type: Reject
  rejectMessage: '{{ range until 40000 }}{{ end }}never'
  match: [{select: '$.kind', matchValue: ConfigMap}]
`,
    );
    const budget = new RequestBudget({ steps: 1_000_000, ms: 60_000 });
    const out = admitWith([hostilePatches, ...costlyChecks, clusterReject].join('---\n'), budget);
    expect(out.allowed).toBe(false);
    expect(out.rejections.slice(0, 3)).toEqual(
      [0, 1, 2].map((i) => ({ rule: { namespace: 'evil', name: `costly-check-${i}` }, message: 'never' })),
    );
    expect(out.rejections.slice(3)).toEqual([
      {
        rule: { namespace: 'evil', name: 'costly-check-3' },
        message: expect.stringMatching(/^could not be evaluated within the request budget \(request budget/),
      },
      {
        rule: { namespace: 'kubemod-system', name: 'require-owner' },
        message: expect.stringMatching(/^could not be evaluated within the request budget/),
      },
    ]);
    // Reported as failures too (warned and counted per rule).
    expect(out.failures.map((f) => f.rule.name)).toEqual(
      expect.arrayContaining(['costly-check-3', 'require-owner']),
    );
    expect(out.patch).toEqual([]);
  });

  test('without Reject rules the Patch rules may use the whole budget', () => {
    const budget = new RequestBudget({ steps: 1_000_000, ms: 60_000 });
    // Eleven spins (~880k steps) fit in the whole budget; with a quarter held back they would not.
    const out = admitWith(spins(11), budget);
    expect(out.failures).toEqual([]);
    expect(out.patched).toHaveLength(11);
  });

  test('a compliant object is still admitted (and patched) when the Reject rules run within the reserve', () => {
    const budget = new RequestBudget({ steps: 1_000_000, ms: 60_000 });
    const owned = {
      ...configMap,
      metadata: { name: 'settings', namespace: 'evil', labels: { owner: 'me' } },
    };
    const out = admitWith(spins(1) + '---\n' + clusterReject, budget, owned);
    expect(out.allowed).toBe(true);
    expect(out.failures).toEqual([]);
    expect(out.patched.map((r) => r.name)).toEqual(['spin-0']);
  });

  test('an object too deep to evaluate is rejected by the Reject rules that apply to it', () => {
    let inner: JsonObject = { leaf: 'x' };
    for (let i = 0; i < 2_000; i++) inner = { a: inner };
    const deep = { ...configMap, data: inner };
    const out = admitWith(spins(1) + '---\n' + clusterReject, RequestBudget.unlimited(), deep);
    expect(out.allowed).toBe(false);
    expect(out.rejections).toEqual([
      {
        rule: { namespace: 'kubemod-system', name: 'require-owner' },
        message: 'could not be evaluated: object nests deeper than 1000 levels',
      },
    ]);
    expect(out.failures.map((f) => f.rule.name)).toEqual(['spin-0', 'require-owner']);
  });
});
