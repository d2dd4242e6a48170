import { cloneJson, JsonObject } from '../util/json';
import { applyPatch } from '../patch/rfc6902';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import { RuleStore } from '../store/rules';
import { admit, AdmissionOutcome } from './admit';
import { PATCHED_BY_ANNOTATION } from './record';
import { storeFromYaml } from './testing';

// The record of the ModRules that patched an object (opt-in): stable when the same rules patch, kept for a rule whose
// change is in place (guarded rules no longer match then), dropped for a rule that is gone, never in last-applied.

const rule = (name: string, spec: string, tier = 0) => `apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: ${name}}
spec:
  executionTier: ${tier}
${spec}`;

// Adds the team label once: it matches only while the label is missing (the idempotent way).
const TEAM = rule(
  'team-label',
  `  type: Patch
  match:
    - {select: '$.kind', matchValue: ConfigMap}
    - {select: '$.metadata.labels.team', negate: true}
  patch: [{op: add, path: /metadata/labels/team, value: platform}]`,
);
// Sets a data key every time: it matches and applies at every admission.
const MODE = rule(
  'mode',
  `  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch: [{op: add, path: /data/mode, value: strict}]`,
  -1,
);
const NO_SECRETS = rule(
  'no-secrets',
  `  type: Reject
  match: [{select: '$.data.password', matchRegex: '.'}]`,
);

const configMap = (extra: JsonObject = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings', namespace: 'default', ...extra },
  data: { a: '1' },
});

/** admit() with the record on, checking the patch turns the request's object into the result. */
function admitted(
  store: RuleStore,
  object: JsonObject,
  operation: 'CREATE' | 'UPDATE' = 'CREATE',
): AdmissionOutcome {
  const before = cloneJson(object);
  const outcome = admit(
    { operation, object, oldObject: operation === 'UPDATE' ? object : null, namespace: 'default' },
    store.snapshot(),
    undefined,
    { recordPatchedBy: true },
  );
  expect(object).toEqual(before);
  if (outcome.allowed) expect(applyPatch(object, outcome.patch)).toEqual(outcome.object);
  return outcome;
}
const recordOf = (o: JsonObject | null) =>
  ((o?.metadata as JsonObject).annotations as JsonObject | undefined)?.[PATCHED_BY_ANNOTATION];

describe('the patched-by record', () => {
  it('is off unless asked for: objects stay as KubeMod leaves them', () => {
    const store = storeFromYaml([TEAM, MODE]);
    const outcome = admit(
      { operation: 'CREATE', object: configMap(), oldObject: null, namespace: 'default' },
      store.snapshot(),
    );
    expect(recordOf(outcome.object)).toBeUndefined();
  });

  it('names the rules that patched, in the order they ran (tier, then namespace/name)', () => {
    const outcome = admitted(storeFromYaml([TEAM, MODE]), configMap());
    expect(recordOf(outcome.object)).toBe('default/mode,default/team-label');
    expect(outcome.patch).toContainEqual({
      op: 'add',
      path: '/metadata/annotations',
      value: { [PATCHED_BY_ANNOTATION]: 'default/mode,default/team-label' },
    });
  });

  it('does not change when the stored object is admitted again: no patch at all', () => {
    const store = storeFromYaml([TEAM, MODE]);
    const stored = admitted(store, configMap()).object!;
    const again = admitted(store, stored, 'UPDATE');
    expect(again.patch).toEqual([]);
    // The guarded rule did not match (its label is there); it stays named: its change is still on the object.
    expect(again.patched.map((r) => r.name)).toEqual(['mode']);
  });

  it('keeps naming a rule whose change is in place when no rule patches at all', () => {
    const store = storeFromYaml([TEAM]);
    const stored = admitted(store, configMap()).object!;
    const relabelled = cloneJson(stored);
    (relabelled.metadata as JsonObject).labels = { team: 'platform', tier: 'web' }; // kubectl label
    const outcome = admitted(store, relabelled, 'UPDATE');
    expect(outcome.patched).toEqual([]);
    expect(outcome.patch).toEqual([]);
  });

  it('drops a rule that is gone, and the annotation with the last one', () => {
    const store = storeFromYaml([TEAM, MODE]);
    const stored = admitted(store, configMap()).object!;
    store.deleteRule('default', 'team-label');
    const one = admitted(store, stored, 'UPDATE');
    expect(recordOf(one.object)).toBe('default/mode');
    store.deleteRule('default', 'mode');
    store.upsertRule(storeFromYaml([NO_SECRETS]).allRules()[0].source);
    const none = admitted(store, one.object!, 'UPDATE');
    expect(none.patch).toEqual([
      { op: 'remove', path: `/metadata/annotations/${PATCHED_BY_ANNOTATION.replace('/', '~1')}` },
    ]);
  });

  it('is not written into kubectl.kubernetes.io/last-applied-configuration (kubectl apply must not own it)', () => {
    const manifest = configMap();
    const lastApplied = JSON.stringify(manifest) + '\n';
    const outcome = admitted(
      storeFromYaml([TEAM]),
      configMap({ annotations: { [LAST_APPLIED_ANNOTATION]: lastApplied } }),
    );
    const annotations = (outcome.object!.metadata as JsonObject).annotations as JsonObject;
    expect(annotations[PATCHED_BY_ANNOTATION]).toBe('default/team-label');
    expect(JSON.parse(String(annotations[LAST_APPLIED_ANNOTATION]))).toMatchObject({
      metadata: { labels: { team: 'platform' } },
    });
    expect(String(annotations[LAST_APPLIED_ANNOTATION])).not.toContain(PATCHED_BY_ANNOTATION);
  });

  it('adds nothing to an object no rule patched, a rejected object or a deletion', () => {
    const store = storeFromYaml([NO_SECRETS]);
    expect(admitted(store, configMap()).patch).toEqual([]);
    const secret = { ...configMap(), data: { password: 'x' } };
    expect(admitted(storeFromYaml([TEAM, NO_SECRETS]), secret)).toMatchObject({ allowed: false, patch: [] });
    const deleted = admit(
      { operation: 'DELETE', object: null, oldObject: configMap(), namespace: 'default' },
      storeFromYaml([TEAM]).snapshot(),
      undefined,
      { recordPatchedBy: true },
    );
    expect(deleted.patch).toEqual([]);
  });
});
