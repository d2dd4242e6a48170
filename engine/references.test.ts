import { cloneJson, JsonObject } from '../util/json';
import { applyPatch } from '../patch/rfc6902';
import { deploymentChain, cronJobChain } from '../fixtures/owners';
import { referencesFrom } from '../store/references';
import { RuleStore } from '../store/rules';
import { admit, AdmissionOutcome } from './admit';
import { ownerChain } from './references';
import { storeFromYaml } from './testing';
import { WITHHELD } from './outcome';

const chain = deploymentChain('shop');
const cron = cronJobChain('shop');
const cluster = referencesFrom([chain.deployment, chain.replicaSet, cron.cronJob]);
const mirror: JsonObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'registry', namespace: 'platform', labels: { 'modrule.io/config': 'registry' } },
  data: { host: 'mirror.example.com' },
};

function run(
  store: RuleStore,
  object: JsonObject,
  refs = cluster,
  namespace = 'shop',
  withholdSecrets?: boolean,
): AdmissionOutcome {
  const before = cloneJson(object);
  const outcome = admit(
    { operation: 'CREATE', object, oldObject: null, namespace },
    store.snapshot(),
    undefined,
    { references: refs, withholdSecrets },
  );
  expect(object).toEqual(before);
  if (outcome.allowed) expect(applyPatch(object, outcome.patch)).toEqual(outcome.object);
  return outcome;
}

const labels = (o: AdmissionOutcome) =>
  ((o.object as JsonObject).metadata as JsonObject).labels as JsonObject;

const copyOwnerLabels = `
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: copy-team, namespace: shop}
spec:
  type: Patch
  match:
    - select: '$.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team'
  patch:
    - op: add
      path: /metadata/labels/team
      value: '{{ .Target.syntheticRefs.owner.syntheticRefs.owner.metadata.labels.team }}'
    - op: add
      path: /metadata/labels/owner-kind
      value: '{{ .Target.syntheticRefs.owner.kind }}'
`;

describe('syntheticRefs.owner', () => {
  test('a Pod gets the label of its ReplicaSet’s Deployment, two levels up', () => {
    const out = run(storeFromYaml(copyOwnerLabels), chain.pod);
    expect(labels(out)).toMatchObject({ team: 'payments', 'owner-kind': 'ReplicaSet' });
    expect((out.object as JsonObject).syntheticRefs).toBeUndefined();
  });

  test('a Job gets its CronJob as owner', () => {
    const store = storeFromYaml(`
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: cost, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Job}, {select: '$.syntheticRefs.owner.metadata.labels["cost-centre"]'}]
  patch:
    - {op: add, path: /metadata/labels/cost-centre, value: '{{ index .Target.syntheticRefs.owner.metadata.labels "cost-centre" }}'}
`);
    expect(labels(run(store, cron.job))).toEqual({ 'cost-centre': 'cc-0815' });
  });

  test('the chain stops at a missing owner, an owner of another uid and a loop', () => {
    const refs = referencesFrom([chain.replicaSet]);
    expect(ownerChain(chain.pod, 'shop', refs, 4)?.metadata).toMatchObject({ name: 'web-7d9f8c6b5' });
    expect(ownerChain(chain.pod, 'shop', refs, 4)?.syntheticRefs).toBeUndefined();
    expect(ownerChain(chain.pod, 'other', refs, 4)).toBeUndefined();
    const recreated = cloneJson(chain.replicaSet);
    (recreated.metadata as JsonObject).uid = 'a-newer-object';
    expect(ownerChain(chain.pod, 'shop', referencesFrom([recreated]), 4)).toBeUndefined();
    // a → b → c → b: each object once, however many levels are asked for.
    const a = owned('a', 'b');
    const b = owned('b', 'c');
    const c = owned('c', 'b');
    const loop = ownerChain(a, 'shop', referencesFrom([a, b, c]), 4);
    expect(loop?.metadata).toMatchObject({ name: 'b' });
    expect(((loop?.syntheticRefs as JsonObject)?.owner as JsonObject)?.metadata).toMatchObject({ name: 'c' });
    expect(((loop?.syntheticRefs as JsonObject).owner as JsonObject).syntheticRefs).toBeUndefined();
    // An object that owns itself has no owner.
    const self = owned('self', 'self');
    expect(ownerChain(self, 'shop', referencesFrom([self]), 4)).toBeUndefined();
    // The cache is never written: levels that carry the next are copies.
    expect(b.syntheticRefs).toBeUndefined();
  });

  test('a rule that does not read the owner does not see it, even when another rule in the request does', () => {
    const store = storeFromYaml([
      copyOwnerLabels,
      `
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: list-refs, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: Pod}]
  patch:
    - op: add
      path: /metadata/annotations/seen
      value: '"{{ range $k, $v := .Target }}{{ if eq $k "syntheticRefs" }}{{ range $r, $_ := $v }}{{ $r }} {{ end }}{{ end }}{{ end }}"'
`,
    ]);
    const out = run(store, chain.pod);
    expect(((out.object as JsonObject).metadata as JsonObject).annotations).toEqual({ seen: '' });
    expect(labels(out).team).toBe('payments');
  });

  test('without a reader every owner is absent: the rule does not match', () => {
    const store = storeFromYaml(copyOwnerLabels);
    const out = admit(
      { operation: 'CREATE', object: chain.pod, oldObject: null, namespace: 'shop' },
      store.snapshot(),
    );
    expect(out.matched).toEqual([]);
  });

  test('a criterion on the owner is not used to skip the rule before its view exists (rule index)', () => {
    const store = storeFromYaml(`
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: by-owner-kind, namespace: shop}
spec:
  type: Patch
  match: [{select: '$.syntheticRefs.owner.kind', matchValue: ReplicaSet}]
  patch: [{op: add, path: /metadata/labels/managed, value: deployment}]
`);
    expect(labels(run(store, chain.pod)).managed).toBe('deployment');
  });
});

describe('named references', () => {
  const injectMirror = (namespace: string, extra = '') => `
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: mirror, namespace: ${namespace}}
spec:
  type: Patch
  targetNamespaceRegex: '.*'
  references:
    - {name: mirror, apiVersion: v1, kind: ConfigMap, namespace: platform, objectName: registry}
    - {name: configs, apiVersion: v1, kind: ConfigMap, namespace: platform, labelSelector: {matchLabels: {modrule.io/config: registry}}}
  match: [{select: '$.kind', matchValue: Pod}${extra}]
  patch:
    - {op: add, path: /metadata/annotations/mirror, value: '"{{ .Target.syntheticRefs.mirror.data.host }}"'}
    - {op: add, path: /metadata/annotations/configs, value: '"{{ len .Target.syntheticRefs.configs }}"'}
`;

  test('a cluster-wide rule injects a value from a central ConfigMap', () => {
    const store = storeFromYaml(injectMirror('kubemod-system'));
    const out = run(store, chain.pod, referencesFrom([mirror]));
    expect(((out.object as JsonObject).metadata as JsonObject).annotations).toEqual({
      mirror: 'mirror.example.com',
      configs: '1',
    });
  });

  test('a missing object is absent in the rule’s view; a selector matching nothing is an empty list', () => {
    const store = storeFromYaml(
      injectMirror('kubemod-system', ", {select: '$.syntheticRefs.mirror', negate: true}"),
    );
    const out = run(store, chain.pod, referencesFrom([]));
    expect(((out.object as JsonObject).metadata as JsonObject).annotations).toEqual({
      mirror: '<no value>',
      configs: '0',
    });
  });

  test('two rules may use the same reference name for different objects: each sees its own', () => {
    const rule = (name: string, object: string) => `
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: ${name}, namespace: shop}
spec:
  type: Patch
  references: [{name: cfg, apiVersion: v1, kind: ConfigMap, objectName: ${object}}]
  match: [{select: '$.syntheticRefs.cfg.data.value'}]
  patch: [{op: add, path: /metadata/labels/${name}, value: '{{ .Target.syntheticRefs.cfg.data.value }}'}]
`;
    const cm = (name: string, value: string): JsonObject => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'shop' },
      data: { value },
    });
    const store = storeFromYaml([rule('a', 'first'), rule('b', 'second')]);
    const out = run(store, chain.pod, referencesFrom([cm('first', 'one'), cm('second', 'two')]));
    expect(labels(out)).toMatchObject({ a: 'one', b: 'two' });
  });

  test('a Reject rule reads its reference; messages of rules that read a Secret are withheld', () => {
    const store = new RuleStore({ references: { allowSecrets: true } });
    store.upsertRule({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'no-token', namespace: 'shop' },
      spec: {
        type: 'Reject',
        references: [{ name: 'token', apiVersion: 'v1', kind: 'Secret', objectName: 'api' }],
        match: [{ select: '$.syntheticRefs.token.data.token' }],
        rejectMessage: 'token is {{ .Target.syntheticRefs.token.data.token }}',
      },
    });
    const secret: JsonObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'api', namespace: 'shop' },
      data: { token: 'c2VjcmV0' },
    };
    const withheld = run(store, chain.pod, referencesFrom([secret]));
    expect(withheld.rejections).toEqual([
      { rule: { namespace: 'shop', name: 'no-token' }, message: WITHHELD },
    ]);
    expect(withheld.secretValues).toBe(true);
    const offline = run(store, chain.pod, referencesFrom([secret]), 'shop', false);
    expect(offline.rejections[0].message).toBe('token is c2VjcmV0');
  });
});

describe('bad input', () => {
  test('a referenced object of 1 MiB: read by key, iterated by a select, under the request budget', () => {
    const data: Record<string, string> = {};
    for (let i = 0; i < 1024; i++) data[`key-${i}`] = `${i}:`.padEnd(1024, 'x');
    const big: JsonObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'big', namespace: 'shop' },
      data,
    };
    expect(JSON.stringify(big).length).toBeGreaterThan(1024 * 1024);
    const store = storeFromYaml(`
kind: ModRule
apiVersion: api.kubemod.io/v1beta1
metadata: {name: big, namespace: shop}
spec:
  type: Patch
  references: [{name: big, apiVersion: v1, kind: ConfigMap, objectName: big}]
  match: [{select: '$.syntheticRefs.big.data.*', matchRegex: '^1000:'}]
  patch: [{op: add, path: /metadata/labels/picked, value: '"{{ index .Target.syntheticRefs.big.data "key-7" | trunc 2 }}"'}]
`);
    const started = process.hrtime.bigint();
    const out = run(store, chain.pod, referencesFrom([big]));
    expect(labels(out).picked).toBe('7:');
    expect(out.failures).toEqual([]);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(2000);
  });
});

function owned(name: string, owner: string): JsonObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${name}`,
      ownerReferences: [
        { apiVersion: 'example.com/v1', kind: 'Widget', name: owner, uid: `uid-${owner}`, controller: true },
      ],
    },
  };
}
