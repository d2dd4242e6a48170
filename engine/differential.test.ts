// Differential test: the optimised engine (rule index, shared select results, copy on write, interned rule parts,
// one-pass last-applied) against a plain reference evaluation of the same rules: every rule in scope, in order,
// matched item by item, and a deep copy of the object per rule. Both must give the same outcome.
import fc from 'fast-check';
import { cloneJson, isJsonObject, jsonEqual, JsonObject, JsonValue } from '../util/json';
import { CompiledRule } from '../rule/compile';
import { AdmissionOperation, LAST_APPLIED_ANNOTATION } from '../rule/types';
import { applyPatch } from '../patch/rfc6902';
import { createPatch } from '../patch/diff';
import { applyKubeModOperation } from '../patch/kubemod';
import { formatPointer, valueAt } from '../patch/pointer';
import { RuleSnapshot, RuleStore } from '../store/rules';
import { admit, AdmissionInput, AdmissionOutcome, RuleRef } from './admit';
import { stableStringify } from './stable-stringify';
import { itemMatches } from './match';
import { Budget, MAX_OPERATIONS_PER_REQUEST, resolveOperations } from './patch';
import { messageOf } from '../util/errors';

const NS = 'team';

/** The reference: the obviously correct loop, no index, no caches, a fresh deep copy per rule. */
function referenceAdmit(input: AdmissionInput, snapshot: RuleSnapshot): AdmissionOutcome {
  const outcome: AdmissionOutcome = {
    allowed: true,
    rejections: [],
    patch: [],
    object: input.object,
    matched: [],
    patched: [],
    failures: [],
    ignored: false,
    overBudget: [],
    quarantined: [],
    unenforced: [],
    overridden: [],
  };
  const subject = input.operation === 'DELETE' ? input.oldObject : input.object;
  if (!subject) return outcome;
  const namespace = input.namespace === '' ? null : input.namespace;
  if (namespace !== null && ignores(snapshot, namespace)) {
    outcome.ignored = true;
    return outcome;
  }
  const rules = snapshot.rulesFor(namespace).filter((r) => r.operations.has(input.operation));

  // The object the rules see: no managedFields, syntheticRefs with the Namespace.
  const working = cloneJson(subject);
  const meta = working.metadata as JsonObject;
  const managed: ManagedFields = {
    at: Object.keys(meta).indexOf('managedFields'),
    value: meta.managedFields,
  };
  delete meta.managedFields;
  const ns = namespace === null ? undefined : snapshot.namespace(namespace);
  working.syntheticRefs = ns ? { namespace: ns } : {};

  const last = lastAppliedOf(subject);
  // A copy: the rules' operations may change `last` in place.
  const lastOriginal = last === undefined ? undefined : cloneJson(last);
  const run: ReferenceRun = {
    outcome,
    current: working,
    changed: false,
    last,
    budget: { remaining: MAX_OPERATIONS_PER_REQUEST },
    applied: [],
    deleting: input.operation === 'DELETE',
  };
  const patchRules = rules.filter((r) => r.type === 'Patch');
  for (let i = 0; i < patchRules.length;) i = runTier(run, patchRules, i);
  findOverridden(run);
  if (run.changed && input.operation !== 'DELETE') {
    const final = finalObject(run, managed, lastOriginal);
    outcome.object = final;
    outcome.patch = createPatch(input.object as JsonObject, final);
  }
  for (const rule of rules) {
    if (rule.type !== 'Reject' || !matches(rule, run.current)) continue;
    outcome.matched.push(ref(rule));
    let message = '';
    try {
      message = rule.rejectMessage ? rule.rejectMessage.render({ Target: run.current, Namespace: NS }) : '';
    } catch (err) {
      outcome.failures.push({ rule: ref(rule), message: `rejectMessage: ${messageOf(err)}` });
    }
    if (rule.enforcement === 'Enforce') outcome.rejections.push({ rule: ref(rule), message });
    else
      outcome.unenforced.push({
        rule: ref(rule),
        action: rule.enforcement,
        effect: 'reject',
        patch: [],
        message,
      });
  }
  if (outcome.rejections.length > 0) {
    outcome.allowed = false;
    outcome.patch = [];
  }
  return outcome;
}

/** The reference's state between rules: what they patched so far, and kubectl's last-applied as patched. */
interface ReferenceRun {
  outcome: AdmissionOutcome;
  current: JsonObject;
  changed: boolean;
  last: JsonValue | undefined;
  budget: Budget;
  /** Each enforced rule's operations and the object right after it applied (for the overrides). */
  applied: Array<{ rule: CompiledRule; ops: ResolvedOperation[]; after: JsonObject }>;
  deleting: boolean;
}

/** The object's managedFields, set aside while the rules run, and where they were among the metadata's keys. */
interface ManagedFields {
  at: number;
  value: JsonValue | undefined;
}

const matches = (rule: CompiledRule, obj: JsonValue) => rule.match.every((item) => itemMatches(item, obj));
const ref = (r: CompiledRule): RuleRef => ({ namespace: r.namespace, name: r.name });

/** Whether the Namespace carries KubeMod's ignore label. */
function ignores(snapshot: RuleSnapshot, namespace: string): boolean {
  const labels = (snapshot.namespace(namespace)?.metadata as JsonObject | undefined)?.labels;
  return isJsonObject(labels) && labels['admission.kubemod.io/ignore'] === 'true';
}

/** kubectl's last-applied-configuration of the object, parsed; undefined without one or when it is not JSON. */
function lastAppliedOf(subject: JsonObject): JsonValue | undefined {
  const lastText = (subject.metadata as JsonObject).annotations;
  const lastRaw = isJsonObject(lastText) ? lastText[LAST_APPLIED_ANNOTATION] : undefined;
  try {
    return typeof lastRaw === 'string' ? (JSON.parse(lastRaw) as JsonValue) : undefined;
  } catch {
    return undefined;
  }
}

/** Runs the Patch rules of the tier that starts at `patchRules[i]`, all matched on the tier's input; the next tier's start. */
function runTier(run: ReferenceRun, patchRules: readonly CompiledRule[], i: number): number {
  const tier = patchRules[i].tier;
  const tierInput = cloneJson(run.current);
  for (; i < patchRules.length && patchRules[i].tier === tier; i++) {
    const rule = patchRules[i];
    if (!matches(rule, tierInput)) continue;
    run.outcome.matched.push(ref(rule));
    try {
      const ops = resolveOperations(rule, run.current, NS, run.budget);
      const next = applyEach(cloneJson(run.current), ops);
      if (!isJsonObject(next)) throw new Error('the patch replaced the object with a non-object');
      if (rule.enforcement !== 'Enforce') {
        // Warn/DryRun: the would-be patch from the object as earlier rules left it, not applied.
        const would = createPatch(run.current, next).filter((o) => !o.path.startsWith('/syntheticRefs'));
        if (would.length > 0 && !run.deleting)
          run.outcome.unenforced.push({
            rule: ref(rule),
            action: rule.enforcement,
            effect: 'patch',
            patch: would,
            message: '',
          });
        continue;
      }
      if (ops.length > 0) run.changed = true;
      run.current = next;
      run.applied.push({ rule, ops, after: cloneJson(next) });
      if (isJsonObject(run.last)) run.last = applyToLastApplied(run.last, ops);
      run.outcome.patched.push(ref(rule));
    } catch (err) {
      run.outcome.failures.push({ rule: ref(rule), message: messageOf(err) });
    }
  }
  return i;
}

type ResolvedOperation = ReturnType<typeof resolveOperations>[number];

/** Each enforced rule's write that a later rule of the request undid (not list inserts, not rewritten by itself). */
function findOverridden(run: ReferenceRun): void {
  const { applied } = run;
  const onPath = (a: readonly string[], b: readonly string[]) =>
    a.every((x, n) => n >= b.length || x === b[n]);
  for (let i = 0; i < applied.length - 1; i++)
    for (const [k, o] of applied[i].ops.entries()) {
      const last = o.tokens[o.tokens.length - 1];
      if (o.op === 'add' && (last === '-' || last === '-1' || /^\d+$/.test(last))) continue;
      if (applied[i].ops.slice(k + 1).some((p) => onPath(p.tokens, o.tokens) || onPath(o.tokens, p.tokens)))
        continue;
      const then = valueAt(applied[i].after, o.tokens);
      const now = valueAt(run.current, o.tokens);
      if (then === undefined ? now === undefined : now !== undefined && jsonEqual(then, now)) continue;
      const by = applied
        .slice(i + 1)
        .reverse()
        .find((a) => a.ops.some((p) => onPath(p.tokens, o.tokens) || onPath(o.tokens, p.tokens)));
      if (by && by.rule.key !== applied[i].rule.key)
        run.outcome.overridden.push({
          rule: ref(applied[i].rule),
          by: ref(by.rule),
          path: formatPointer(o.tokens),
        });
    }
}

/** A rule's operations applied in order to `value`; the first that fails fails the rule. */
function applyEach(value: JsonValue, ops: readonly ResolvedOperation[]): JsonValue {
  let next = value;
  for (const o of ops) {
    try {
      next = applyKubeModOperation(
        next,
        o.op,
        o.tokens,
        o.value === undefined ? undefined : cloneJson(o.value),
      );
    } catch (err) {
      throw new Error(`${o.op} ${formatPointer(o.tokens)}: ${messageOf(err)}`);
    }
  }
  return next;
}

/** A rule's operations applied to the last-applied configuration: those on syntheticRefs or not in it are skipped. */
function applyToLastApplied(last: JsonValue, ops: readonly ResolvedOperation[]): JsonValue {
  for (const o of ops) {
    if (o.tokens[0] === 'syntheticRefs') continue;
    try {
      last = applyKubeModOperation(
        last,
        o.op,
        o.tokens,
        o.value === undefined ? undefined : cloneJson(o.value),
      );
    } catch {
      // not in the annotation
    }
  }
  return last;
}

/** The patched object as answered: no syntheticRefs, managedFields back in place, last-applied rewritten if changed. */
function finalObject(
  run: ReferenceRun,
  managed: ManagedFields,
  lastOriginal: JsonValue | undefined,
): JsonObject {
  const final = cloneJson(run.current);
  delete final.syntheticRefs;
  const fmeta = final.metadata as JsonObject;
  if (managed.value !== undefined) {
    const keys = Object.keys(fmeta).filter((k) => k !== 'managedFields');
    keys.splice(Math.min(managed.at, keys.length), 0, 'managedFields');
    const rebuilt: JsonObject = {};
    for (const k of keys) rebuilt[k] = k === 'managedFields' ? managed.value : fmeta[k];
    final.metadata = rebuilt;
  }
  const annotations = (final.metadata as JsonObject).annotations;
  const { last } = run;
  if (
    isJsonObject(last) &&
    lastOriginal !== undefined &&
    !jsonEqual(last, lastOriginal) &&
    isJsonObject(annotations)
  )
    annotations[LAST_APPLIED_ANNOTATION] = stableStringify(last) + '\n';
  return final;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

// Small alphabets, so that rules and objects often meet.
const word = fc.constantFrom('web', 'db', 'true', '1', '', 'Deployment', 'Service');
const labelValue: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 8, arbitrary: word },
  { weight: 1, arbitrary: fc.constantFrom<JsonValue>(true, 1, ['web'], { a: 'web' }, null) },
);
const labels = fc.dictionary(fc.constantFrom('app', 'tier', 'x'), labelValue, { maxKeys: 3 });
const image = fc.constantFrom('nginx:1.14.2', 'registry.example.com/shop/web:1', 'redis:7');

const object: fc.Arbitrary<JsonObject> = fc
  .record({
    kind: fc.constantFrom('Deployment', 'Service', 'Pod'),
    apiVersion: fc.constantFrom('v1', 'apps/v1'),
    name: fc.constantFrom('web', 'db', 'x'),
    labels,
    annotations: fc.dictionary(fc.constantFrom('x', 'note'), labelValue, { maxKeys: 2 }),
    lastApplied: fc.boolean(),
    managedFields: fc.boolean(),
    images: fc.array(image, { maxLength: 3 }),
    replicas: fc.constantFrom<JsonValue>(1, 3, '2', null),
  })
  .map((o) => {
    const user = {
      apiVersion: o.apiVersion,
      kind: o.kind,
      metadata: { name: o.name, labels: o.labels },
      spec: {},
    };
    const annotations: JsonObject = { ...o.annotations };
    if (o.lastApplied) annotations[LAST_APPLIED_ANNOTATION] = JSON.stringify(user) + '\n';
    const metadata: JsonObject = { name: o.name, namespace: NS, labels: o.labels, annotations };
    if (o.managedFields) metadata.managedFields = [{ manager: 'kubectl', operation: 'Update' }];
    return {
      apiVersion: o.apiVersion,
      kind: o.kind,
      metadata,
      spec: { replicas: o.replicas, containers: o.images.map((i, n) => ({ name: `c${n}`, image: i })) },
    };
  });

const select = fc.constantFrom(
  '$.kind',
  '$.apiVersion',
  '$.metadata.name',
  '$.metadata.labels.app',
  '$.metadata.labels.tier',
  '$.metadata.annotations.x',
  '$.spec.containers[*].image',
  '$.spec.replicas',
  '$.metadata.labels',
);
const matchItem = fc
  .record({
    select,
    how: fc.constantFrom('value', 'values', 'regex', 'none'),
    value: word,
    values: fc.array(word, { maxLength: 3 }),
    regex: fc.constantFrom('^web', 'nginx', '^$', '1'),
    matchFor: fc.constantFrom('Any', 'All', undefined),
    negate: fc.boolean(),
  })
  .map((m) => ({
    select: m.select,
    ...(m.how === 'value' ? { matchValue: m.value } : {}),
    ...(m.how === 'values' ? { matchValues: m.values } : {}),
    ...(m.how === 'regex' ? { matchRegex: m.regex } : {}),
    ...(m.matchFor ? { matchFor: m.matchFor } : {}),
    ...(m.negate ? { negate: true } : {}),
  }));
const patchOp = fc
  .record({
    op: fc.constantFrom('add', 'replace', 'remove'),
    path: fc.constantFrom(
      '/metadata/labels/app',
      '/metadata/labels/new',
      '/metadata/annotations/x',
      '/metadata/annotations',
      '/spec/replicas',
      '/spec/containers/0/image',
      '/spec/containers/-',
      '/syntheticRefs/x',
    ),
    value: fc.constantFrom(
      'web',
      '"1"',
      '3',
      '{a: 1}',
      '[x]',
      'yes',
      '{{ .Target.metadata.name }}-t',
      '{{ .Target.metadata.labels.app }}',
      '{{ .Namespace }}',
      '{{ fail "boom" }}',
    ),
  })
  .map((p) => (p.op === 'remove' ? { op: p.op, path: p.path } : p));

const rule = fc
  .record({
    wide: fc.boolean(),
    type: fc.constantFrom('Patch', 'Patch', 'Reject'),
    tier: fc.constantFrom(-1, 0, 0, 1),
    operations: fc.constantFrom<JsonValue[] | undefined>(
      undefined,
      ['CREATE'],
      ['DELETE'],
      ['CREATE', 'UPDATE', 'DELETE'],
    ),
    match: fc.array(matchItem, { minLength: 1, maxLength: 3 }),
    patch: fc.array(patchOp, { minLength: 1, maxLength: 3 }),
    rejectMessage: fc.constantFrom(undefined, 'no {{ .Target.metadata.name }}', '{{ fail "x" }}'),
    enforcementAction: fc.constantFrom(undefined, undefined, undefined, 'Enforce', 'Warn', 'DryRun'),
  })
  .map((r) => ({
    wide: r.wide,
    spec: {
      type: r.type,
      executionTier: r.tier,
      ...(r.operations ? { admissionOperations: r.operations } : {}),
      ...(r.wide ? { targetNamespaceRegex: '^te' } : {}),
      ...(r.enforcementAction ? { enforcementAction: r.enforcementAction } : {}),
      match: r.match,
      ...(r.type === 'Patch'
        ? { patch: r.patch }
        : r.rejectMessage
          ? { rejectMessage: r.rejectMessage }
          : {}),
    },
  }));

function storeOf(rules: Array<{ wide: boolean; spec: JsonObject }>): RuleStore {
  const store = new RuleStore();
  store.replaceRules(
    rules.map((r, i) => ({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: `r${i % 7}-${i}`, namespace: r.wide ? 'kubemod-system' : NS },
      spec: r.spec,
    })),
  );
  store.replaceNamespaces([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { team: 'a' } } },
  ]);
  return store;
}

// The engine never mutates what it is given or what rules hold: freeze both.
function freezeRules(snapshot: RuleSnapshot): void {
  for (const r of snapshot.rulesFor(NS))
    for (const op of r.patch) if (op.value.kind === 'constant') deepFreeze(op.value.value);
}

const seen = { runs: 0, rules: 0, matched: 0, patched: 0, rejected: 0, failed: 0 };
function stats(snapshot: RuleSnapshot, o: AdmissionOutcome): void {
  seen.runs++;
  seen.rules += snapshot.rulesFor(NS).length;
  if (o.matched.length) seen.matched++;
  if (o.patch.length) seen.patched++;
  if (o.rejections.length) seen.rejected++;
  if (o.failures.length) seen.failed++;
}
afterAll(() => {
  if (process.env.DIFF_STATS) console.log(seen);
});

describe('optimised engine = plain reference evaluation', () => {
  it('gives the same outcome for random rule sets and objects', () => {
    fc.assert(
      fc.property(
        fc.array(rule, { maxLength: 14 }),
        object,
        object,
        fc.constantFrom<AdmissionOperation>('CREATE', 'UPDATE', 'DELETE'),
        (rules, obj, old, operation) => {
          const snapshot = storeOf(rules).snapshot();
          freezeRules(snapshot);
          const input: AdmissionInput = {
            operation,
            object: operation === 'DELETE' ? null : deepFreeze(obj),
            oldObject: operation === 'CREATE' ? null : deepFreeze(old),
            namespace: NS,
          };
          const expected = referenceAdmit(input, snapshot);
          const actual = admit(input, snapshot);
          if (process.env.DIFF_STATS) stats(snapshot, actual);
          expect(actual).toEqual(expected);
          if (input.object && actual.allowed)
            expect(applyPatch(input.object, actual.patch)).toEqual(actual.object);
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('re-reads the index for a tier whose input an earlier tier changed', () => {
    const rules = [
      {
        wide: false,
        spec: {
          type: 'Patch',
          executionTier: 0,
          match: [{ select: '$.kind', matchValue: 'Pod' }],
          patch: [{ op: 'add', path: '/metadata/labels/app', value: 'web' }],
        },
      },
      {
        wide: false,
        spec: {
          type: 'Patch',
          executionTier: 1,
          match: [{ select: '$.metadata.labels.app', matchValue: 'web' }],
          patch: [{ op: 'add', path: '/metadata/labels/seen', value: 'yes-web' }],
        },
      },
    ];
    const snapshot = storeOf(rules).snapshot();
    const obj: JsonObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: NS, labels: { app: 'db' } },
    };
    const input: AdmissionInput = { operation: 'CREATE', object: obj, oldObject: null, namespace: NS };
    const actual = admit(input, snapshot);
    expect(actual.patched.map((r) => r.name)).toEqual(['r0-0', 'r1-1']);
    expect(actual).toEqual(referenceAdmit(input, snapshot));
  });

  it('writes last-applied exactly as a sorting writer does', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constantFrom<JsonValue>(null, true, 0, -1.5, 'a', ''),
        fc.array(tie('value') as fc.Arbitrary<JsonValue>, { maxLength: 3 }),
        fc.dictionary(
          fc.constantFrom('b', 'a', '10', '9', '__proto__', 'B', 'a.b'),
          tie('value') as fc.Arbitrary<JsonValue>,
          {
            maxKeys: 4,
          },
        ),
      ),
    }));
    const reference = (v: JsonValue): string => {
      if (v === null || typeof v !== 'object') return JSON.stringify(v);
      if (Array.isArray(v)) return `[${v.map(reference).join(',')}]`;
      return `{${Object.keys(v)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${reference(v[k])}`)
        .join(',')}}`;
    };
    fc.assert(
      fc.property(json.value as fc.Arbitrary<JsonValue>, (v) => {
        expect(stableStringify(v)).toBe(reference(v));
      }),
      { numRuns: 2000 },
    );
  });
});
