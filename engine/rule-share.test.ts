import { JsonObject } from '../util/json';
import { RequestBudget } from '../util/budget';
import { RuleStore } from '../store/rules';
import { HEAVY_SPECS, heavyObject, HeavySpec, modRule, neighbourRule } from '../fixtures/heavy';
import { smallConfigMap } from '../fixtures/hostile';
import { admit, AdmitOptions } from './admit';

// Issue 24: a heavy rule fails alone. Each rule has its own share of the request budget (a tenth); a rule that
// runs out of it fails (or, a Reject rule, rejects) by itself and the other rules of the request still run.
// Budgets here bind on steps only (a minute of time), so the outcomes do not depend on the machine's speed.
const LIMITS = { steps: 250_000, ms: 60_000 };
const SHARE = 25_000;
const BIG_KEYS = 8_000;

const budget = () => new RequestBudget(LIMITS);

function storeOf(rules: JsonObject[]): RuleStore {
  const store = new RuleStore();
  expect(store.replaceRules(rules)).toEqual([]);
  return store;
}

function create(store: RuleStore, object: JsonObject, options?: AdmitOptions) {
  const namespace = (object.metadata as JsonObject).namespace as string;
  return admit(
    { operation: 'CREATE', object, oldObject: null, namespace },
    store.snapshot(),
    budget(),
    options,
  );
}

const labels = (o: JsonObject | null) =>
  ((o?.metadata as JsonObject | undefined)?.labels ?? {}) as JsonObject;
const names = (refs: Array<{ name: string }>) => refs.map((r) => r.name);

// The neighbour sorts after every heavy rule of the catalogue: it runs once the heavy one has spent its share.
const NEIGHBOUR = 'z-neighbour';

describe.each(HEAVY_SPECS.map((h) => [h.heavy, h.name, h] as const))(
  'a heavy rule (%s: %s) next to an ordinary one in the same namespace',
  (_class, name, heavy: HeavySpec) => {
    const store = storeOf([modRule('team', name, heavy.spec), neighbourRule('team', NEIGHBOUR)]);
    const object = heavyObject(heavy, 'team', BIG_KEYS);

    it('fails alone: the neighbour still applies on the same request', () => {
      const out = create(store, object);
      expect(out.allowed).toBe(true);
      expect(labels(out.object).owner).toBe('team-team');
      expect(names(out.patched)).toEqual([NEIGHBOUR]);
      expect(out.failures).toEqual([
        {
          rule: { namespace: 'team', name },
          message: `rule budget exhausted: more than ${SHARE} evaluation steps (one rule's share)`,
        },
      ]);
      expect(names(out.overBudget)).toEqual([name]);
    });

    it('quarantined, it is skipped at once with a note, and the neighbour still applies', () => {
      const asked: string[] = [];
      const out = create(store, object, {
        quarantined: (rule) => (asked.push(rule.name), rule.name === name ? 'quarantined for a while' : null),
      });
      expect(labels(out.object).owner).toBe('team-team');
      expect(out.failures).toEqual([]);
      expect(out.quarantined).toEqual([
        { rule: { namespace: 'team', name }, message: 'skipped: quarantined for a while' },
      ]);
      expect(asked).toEqual([name, NEIGHBOUR]);
    });

    if (heavy.onlyBig) {
      it('is cheap on an ordinary object: both apply', () => {
        const out = create(store, smallConfigMap('team'));
        expect(out.failures).toEqual([]);
        expect(out.overBudget).toEqual([]);
        expect(labels(out.object).owner).toBe('team-team');
      });
    }
  },
);

describe('heavy rules together', () => {
  const byName = new Map(HEAVY_SPECS.map((h) => [h.name, h.spec]));

  it('two heavy rules in one namespace fail alone, each; the neighbour between and after them applies', () => {
    const store = storeOf([
      modRule('team', 'a-until', byName.get('until-million')!),
      modRule('team', 'm-neighbour', neighbourRule('team').spec as JsonObject),
      modRule('team', 'p-regex', byName.get('regex-replace')!),
      neighbourRule('team', NEIGHBOUR),
    ]);
    const out = create(store, smallConfigMap('team'));
    expect(names(out.overBudget)).toEqual(['a-until', 'p-regex']);
    expect(names(out.patched)).toEqual(['m-neighbour', NEIGHBOUR]);
  });

  it('a heavy cluster-wide rule from kubemod-system fails alone in every namespace; namespaced rules apply', () => {
    const wide = { ...byName.get('nested-range')!, targetNamespaceRegex: '.*' };
    const store = storeOf([
      modRule('kubemod-system', 'heavy-everywhere', wide),
      neighbourRule('team-a', NEIGHBOUR),
      neighbourRule('team-b', NEIGHBOUR),
    ]);
    for (const ns of ['team-a', 'team-b']) {
      const out = create(store, smallConfigMap(ns));
      expect(out.overBudget).toEqual([{ namespace: 'kubemod-system', name: 'heavy-everywhere' }]);
      expect(labels(out.object).owner).toBe(`${ns}-team`);
    }
  });

  it('many moderate rules still exhaust the request together: from then on the rest fail (namespace-wide)', () => {
    const moderate = (i: number) =>
      modRule('team', `moderate-${i}`, {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        // ~20,000 steps: within a rule's share (25,000), thirteen of them are more than the 250,000.
        patch: [
          { op: 'add', path: `/metadata/annotations/m-${i}`, value: '{{ range until 10000 }}{{ end }}x' },
        ],
      });
    const store = storeOf([
      ...Array.from({ length: 13 }, (_, i) => moderate(10 + i)),
      neighbourRule('team', NEIGHBOUR),
    ]);
    const b = budget();
    const out = admit(
      { operation: 'CREATE', object: smallConfigMap('team'), oldObject: null, namespace: 'team' },
      store.snapshot(),
      b,
    );
    expect(out.overBudget).toEqual([]);
    expect(out.failures.map((f) => f.rule.name)).toContain(NEIGHBOUR);
    expect(out.failures.at(-1)?.message).toMatch(/^request budget exhausted: more than 250000/);
    expect(b.exhausted).not.toBeNull();
  });
});

describe('a Reject rule heavy in its rejectMessage', () => {
  const heavyReject = modRule('team', 'a-heavy-message', {
    type: 'Reject',
    match: [
      { select: '$.kind', matchValue: 'ConfigMap' },
      { select: '$.data.forbidden', matchValue: 'yes' },
    ],
    rejectMessage: '{{ range until 1000000 }}{{ end }}forbidden',
  });
  const neighbourReject = modRule('team', 'b-policy', {
    type: 'Reject',
    match: [
      { select: '$.kind', matchValue: 'ConfigMap' },
      { select: '$.data.forbidden', matchValue: 'yes' },
    ],
    rejectMessage: 'ConfigMap {{ .Target.metadata.name }} is forbidden here',
  });
  const store = storeOf([heavyReject, neighbourReject, neighbourRule('team', NEIGHBOUR)]);
  const forbidden = { ...smallConfigMap('team'), data: { forbidden: 'yes' } };

  it('rejects alone (fail closed), naming itself; the neighbour policy still renders its message', () => {
    const out = create(store, forbidden);
    expect(out.allowed).toBe(false);
    expect(out.rejections).toEqual([
      {
        rule: { namespace: 'team', name: 'a-heavy-message' },
        message:
          "could not be evaluated within its share of the request budget (rule budget exhausted: more than 25000 evaluation steps (one rule's share))",
      },
      { rule: { namespace: 'team', name: 'b-policy' }, message: 'ConfigMap settings is forbidden here' },
    ]);
    expect(names(out.overBudget)).toEqual(['a-heavy-message']);
  });

  it('quarantined, it still rejects what it matches, without rendering its message', () => {
    const quarantined = (rule: { name: string }) => (rule.name === 'a-heavy-message' ? 'quarantined' : null);
    const out = create(store, forbidden, { quarantined });
    expect(out.rejections).toEqual([
      { rule: { namespace: 'team', name: 'a-heavy-message' }, message: '' },
      { rule: { namespace: 'team', name: 'b-policy' }, message: 'ConfigMap settings is forbidden here' },
    ]);
    expect(out.quarantined).toEqual([
      {
        rule: { namespace: 'team', name: 'a-heavy-message' },
        message: 'rejectMessage not rendered: quarantined',
      },
    ]);
    expect(out.failures).toEqual([]);
    // What it does not match is admitted, and patched by the neighbour.
    const fine = create(store, smallConfigMap('team'), { quarantined });
    expect(fine.allowed).toBe(true);
    expect(fine.quarantined).toEqual([]);
    expect(labels(fine.object).owner).toBe('team-team');
  });
});

describe('time', () => {
  it('a rule that spends more than its share of CPU time fails alone', () => {
    let wall = 0;
    // Every read of the wall clock moves it on by 1 ms, all of it CPU time.
    const b = new RequestBudget({ steps: 1e12, ms: 1_000 }, { now: () => wall++, cpu: () => wall });
    const store = storeOf([
      modRule('team', 'a-slow', HEAVY_SPECS.find((h) => h.name === 'nested-range')!.spec),
      neighbourRule('team', NEIGHBOUR),
    ]);
    const out = admit(
      { operation: 'CREATE', object: smallConfigMap('team'), oldObject: null, namespace: 'team' },
      store.snapshot(),
      b,
    );
    expect(out.failures).toEqual([
      {
        rule: { namespace: 'team', name: 'a-slow' },
        message: "rule budget exhausted: took more than 100 ms of CPU time (one rule's share)",
      },
    ]);
    expect(names(out.patched)).toEqual([NEIGHBOUR]);
    expect(b.exhausted).toBeNull();
  });
});
