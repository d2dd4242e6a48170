import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { RequestBudget } from '../util/budget';
import { MAX_OBJECT_DEPTH } from '../util/depth';
import { admit } from './admit';
import { admitChecked, ruleYaml as rule, storeFromYaml } from './testing';
import { patchSummary, unenforcedSummary } from './unenforced';

const labelPatch = (name: string, label: string, value: string, extra = ''): string =>
  rule(
    name,
    `
type: Patch
${extra}
match:
  - select: '$.kind'
    matchValue: Deployment
patch:
  - op: add
    path: /metadata/labels/${label}
    value: '${value}'`,
  );

const labels = (o: JsonObject | null): JsonObject => ((o?.metadata as JsonObject).labels ?? {}) as JsonObject;

describe('enforcementAction: Patch rules', () => {
  test.each(['Warn', 'DryRun'] as const)('%s: admitted unpatched, the would-be patch recorded', (action) => {
    const store = storeFromYaml(labelPatch('tag', 'team', 'web', `enforcementAction: ${action}`));
    const d = loadFixture('deployment');
    const out = admitChecked(store, d);
    expect(out.allowed).toBe(true);
    expect(out.patch).toEqual([]);
    expect(out.object).toBe(d);
    expect(out.patched).toEqual([]);
    expect(out.matched).toEqual([{ namespace: 'default', name: 'tag' }]);
    expect(out.unenforced).toEqual([
      {
        rule: { namespace: 'default', name: 'tag' },
        action,
        effect: 'patch',
        patch: [{ op: 'add', path: '/metadata/labels/team', value: 'web' }],
        message: '',
      },
    ]);
  });

  test('Enforce (and no field) patches as before', () => {
    const store = storeFromYaml(
      labelPatch('a', 'one', 'x', 'enforcementAction: Enforce') + labelPatch('b', 'two', 'z'),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(labels(out.object)).toMatchObject({ one: 'x', two: 'z' });
    expect(out.unenforced).toEqual([]);
  });

  test('a rule that would change nothing records nothing', () => {
    const store = storeFromYaml(labelPatch('same', 'app', 'nginx', 'enforcementAction: DryRun'));
    expect(admitChecked(store, loadFixture('deployment')).unenforced).toEqual([]);
  });

  test('later rules see the object without the would-be patch, in the same tier and in later tiers', () => {
    // b and c copy the label a would set: they must not see it.
    const copy = (name: string, tier: number) =>
      rule(
        name,
        `
type: Patch
executionTier: ${tier}
match:
  - select: '$.kind'
    matchValue: Deployment
  - select: '$.metadata.labels.team'
    matchValue: web
patch:
  - op: add
    path: /metadata/labels/${name}
    value: seen`,
      );
    const store = storeFromYaml(
      labelPatch('a', 'team', 'web', 'enforcementAction: DryRun') + copy('b', 0) + copy('c', 1),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(labels(out.object)).toEqual({ app: 'nginx' });
    expect(out.unenforced.map((u) => u.rule.name)).toEqual(['a']);
  });

  test('the would-be patch is computed on the object as the earlier enforced rules left it', () => {
    const store = storeFromYaml(
      labelPatch('a', 'team', 'web') +
        labelPatch('b', 'team', 'web', 'enforcementAction: Warn') +
        labelPatch('c', 'team', 'db', 'enforcementAction: Warn'),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(labels(out.object).team).toBe('web');
    // b would set what a set already: nothing to record; c would replace it.
    expect(out.unenforced.map((u) => [u.rule.name, u.patch])).toEqual([
      ['c', [{ op: 'replace', path: '/metadata/labels/team', value: 'db' }]],
    ]);
  });

  test('on DELETE nothing would be patched', () => {
    const store = storeFromYaml(
      labelPatch('a', 'team', 'web', 'enforcementAction: DryRun\nadmissionOperations: [DELETE]'),
    );
    const d = loadFixture('deployment');
    const out = admitChecked(store, null, { operation: 'DELETE', oldObject: d });
    expect(out.unenforced).toEqual([]);
  });

  test('a failing DryRun rule is a failure, not a would-be patch', () => {
    const store = storeFromYaml(
      rule(
        'broken',
        `
type: Patch
enforcementAction: DryRun
match:
  - select: '$.kind'
    matchValue: Deployment
patch:
  - op: replace
    path: /spec/nothing/here
    value: x`,
      ),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(out.failures.map((f) => f.rule.name)).toEqual(['broken']);
    expect(out.unenforced).toEqual([]);
  });
});

const rejectRule = (name: string, extra: string, message = 'no nginx here'): string =>
  rule(
    name,
    `
type: Reject
${extra}
match:
  - select: '$.kind'
    matchValue: Deployment
rejectMessage: '${message} ({{ .Target.metadata.name }})'`,
  );

describe('enforcementAction: Reject rules', () => {
  test.each(['Warn', 'DryRun'] as const)(
    '%s: admitted, the rejection recorded with its message',
    (action) => {
      const store = storeFromYaml(rejectRule('deny', `enforcementAction: ${action}`));
      const out = admitChecked(store, loadFixture('deployment'));
      expect(out.allowed).toBe(true);
      expect(out.rejections).toEqual([]);
      expect(out.unenforced).toEqual([
        {
          rule: { namespace: 'default', name: 'deny' },
          action,
          effect: 'reject',
          patch: [],
          message: 'no nginx here (nginx)',
        },
      ]);
    },
  );

  test('an enforced Reject rule beside a DryRun one still rejects, alone', () => {
    const store = storeFromYaml(rejectRule('dry', 'enforcementAction: DryRun') + rejectRule('real', ''));
    const out = admitChecked(store, loadFixture('deployment'));
    expect(out.allowed).toBe(false);
    expect(out.rejections.map((r) => r.rule.name)).toEqual(['real']);
    expect(out.unenforced.map((u) => u.rule.name)).toEqual(['dry']);
  });

  test('a DryRun Reject rule sees the enforced patches, not the would-be ones', () => {
    const store = storeFromYaml(
      labelPatch('a', 'team', 'web') +
        labelPatch('b', 'tier', 'front', 'enforcementAction: DryRun') +
        rule(
          'check',
          `
type: Reject
enforcementAction: DryRun
match:
  - select: '$.metadata.labels.team'
    matchValue: web
  - select: '$.metadata.labels.tier'
    matchValue: front
    negate: true`,
        ),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(out.unenforced.map((u) => [u.rule.name, u.effect])).toEqual([
      ['b', 'patch'],
      ['check', 'reject'],
    ]);
  });

  test('a Warn Reject rule that runs out of its share fails, and does not reject (fail closed is for Enforce)', () => {
    const costly = (name: string, extra: string) =>
      rejectRule(name, extra).replace(
        /rejectMessage: .*/,
        "rejectMessage: '{{ range until 400000 }}{{ end }}never'",
      );
    const run = (rules: string) =>
      admit(
        { operation: 'CREATE', object: loadFixture('deployment'), oldObject: null, namespace: 'default' },
        storeFromYaml(rules).snapshot(),
        new RequestBudget({ steps: 1_000_000, ms: 60_000 }),
      );
    const warned = run(costly('warned', 'enforcementAction: Warn'));
    expect(warned.allowed).toBe(true);
    expect(warned.failures.map((f) => f.rule.name)).toEqual(['warned']);
    expect(run(costly('enforced', '')).allowed).toBe(false);
  });

  test('an object nesting too deep is refused by enforced Reject rules only', () => {
    let deep: JsonObject = {};
    const object: JsonObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: deep,
    };
    for (let i = 0; i < MAX_OBJECT_DEPTH + 2; i++) deep = deep.x = {};
    const warnOnly = admitChecked(storeFromYaml(rejectRule('w', 'enforcementAction: Warn')), object);
    expect(warnOnly.allowed).toBe(true);
    expect(warnOnly.failures.map((f) => f.rule.name)).toEqual(['w']);
    const enforced = admitChecked(storeFromYaml(rejectRule('e', '')), object);
    expect(enforced.allowed).toBe(false);
  });
});

describe('summaries (warnings, Events, status)', () => {
  test('paths only, five at most', () => {
    const patch = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((k) => ({
      op: 'add' as const,
      path: `/x/${k}`,
      value: 'secret',
    }));
    expect(patchSummary(patch)).toBe('add /x/a, add /x/b, add /x/c, add /x/d, add /x/e, 2 more');
    const u = {
      rule: { namespace: 'n', name: 'r' },
      action: 'Warn' as const,
      effect: 'patch' as const,
      patch,
      message: '',
    };
    expect(unenforcedSummary(u)).not.toContain('secret');
    expect(unenforcedSummary({ ...u, effect: 'reject', patch: [], message: 'no' })).toBe('would reject: no');
    expect(unenforcedSummary({ ...u, effect: 'reject', patch: [], message: '' })).toBe(
      'would reject the object',
    );
  });
});
