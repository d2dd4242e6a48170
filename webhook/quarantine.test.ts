import { JsonObject } from '../util/json';
import { RequestBudget } from '../util/budget';
import { RuleStore } from '../store/rules';
import { admit } from '../engine/admit';
import { HEAVY_SPECS, modRule, neighbourRule } from '../fixtures/heavy';
import { smallConfigMap } from '../fixtures/hostile';
import { NamespaceFairness } from './fairness';
import { QuarantineChange, RuleQuarantine } from './quarantine';

// Issue 24: a rule that keeps running out of its own share is set aside by itself, for a cool-down.

const LIMITS = { steps: 250_000, ms: 60_000 };
const heavySpec = HEAVY_SPECS.find((h) => h.name === 'until-million')!.spec;

function setUp(options: { now: () => number; coolDownMs?: number }) {
  const store = new RuleStore();
  expect(store.replaceRules([modRule('team', 'heavy', heavySpec), neighbourRule('team')])).toEqual([]);
  const quarantine = new RuleQuarantine({ ...options, offences: 3, windowMs: 60_000 }, store);
  const changes: QuarantineChange[] = [];
  quarantine.subscribe((c) => changes.push(c));
  // One admission as the webhook runs it: the quarantine's check in, the offences booked after.
  const request = () => {
    const snapshot = store.snapshot();
    const out = admit(
      { operation: 'CREATE', object: smallConfigMap('team'), oldObject: null, namespace: 'team' },
      snapshot,
      new RequestBudget(LIMITS),
      { quarantined: quarantine.gate() },
    );
    quarantine.record(out, snapshot);
    return out;
  };
  return { store, quarantine, changes, request };
}

const owner = (o: JsonObject | null) => ((o?.metadata as JsonObject).labels as JsonObject).owner;

describe('RuleQuarantine', () => {
  let t = 1_000_000;
  const now = () => t;
  afterEach(() => jest.useRealTimers());

  it('quarantines a rule after 3 runs out of its share; the neighbour applies throughout', () => {
    const { quarantine, changes, request } = setUp({ now });
    for (let i = 0; i < 3; i++) {
      expect(quarantine.gate()).toBeUndefined();
      const out = request();
      expect(owner(out.object)).toBe('team-team');
      expect(out.overBudget).toEqual([{ namespace: 'team', name: 'heavy' }]);
      t += 1_000;
    }
    expect(changes.map((c) => c.kind)).toEqual(['offence', 'offence', 'offence', 'quarantined']);
    expect(quarantine.size).toBe(1);
    expect(quarantine.stateOf('team', 'heavy')).toEqual({
      rule: { namespace: 'team', name: 'heavy' },
      until: t - 1_000 + 60_000,
      offences: 3,
      reason: "rule budget exhausted: more than 25000 evaluation steps (one rule's share)",
      coolDownMs: 60_000,
    });
    const out = request();
    expect(out.failures).toEqual([]);
    expect(owner(out.object)).toBe('team-team');
    expect(out.quarantined).toEqual([
      {
        rule: { namespace: 'team', name: 'heavy' },
        message: expect.stringMatching(
          /^skipped: quarantined until \S+Z on this replica: ran out of its share of the request budget 3 times within 60 s \(last: rule budget exhausted: more than 25000/,
        ),
      },
    ]);
    quarantine.close();
  });

  it('offences further apart than the window do not add up; ordinary rules are never booked', () => {
    const { quarantine, changes, request } = setUp({ now });
    for (let i = 0; i < 5; i++) {
      request();
      t += 31_000;
    }
    expect(quarantine.size).toBe(0);
    expect(changes.every((c) => c.kind === 'offence' && c.rule.name === 'heavy')).toBe(true);
    quarantine.close();
  });

  it('ends after the cool-down (its timer), and a rule that keeps at it gets twice as long the next time', () => {
    jest.useFakeTimers({ now: t });
    const { quarantine, changes, request } = setUp({ now: Date.now });
    for (let i = 0; i < 3; i++) request();
    expect(quarantine.stateOf('team', 'heavy')?.coolDownMs).toBe(60_000);
    jest.advanceTimersByTime(60_000);
    expect(changes.at(-1)).toEqual({
      kind: 'released',
      rule: { namespace: 'team', name: 'heavy' },
      why: 'cool-down over',
    });
    expect(quarantine.gate()).toBeUndefined();
    // Back in force: it runs (and fails alone) again, three more times.
    for (let i = 0; i < 3; i++) expect(request().overBudget).toHaveLength(1);
    expect(quarantine.stateOf('team', 'heavy')?.coolDownMs).toBe(120_000);
    quarantine.close();
  });

  it('a changed rule starts afresh: its quarantine ends as soon as the store holds the new version', () => {
    const { store, quarantine, changes, request } = setUp({ now });
    for (let i = 0; i < 3; i++) request();
    expect(quarantine.size).toBe(1);
    // The tenant slims the rule down.
    store.upsertRule(neighbourRule('team', 'heavy'));
    expect(quarantine.stateOf('team', 'heavy')).toBeUndefined();
    expect(changes.at(-1)).toEqual({
      kind: 'released',
      rule: { namespace: 'team', name: 'heavy' },
      why: 'rule changed',
    });
    expect(request().failures).toEqual([]);
    quarantine.close();
  });
});

describe('demotion is for what the namespace as a whole causes', () => {
  it('a rule running out of its own share does not exhaust the request: no demotion for "budget exhausted"', async () => {
    // A stopped clock: only the steps count here.
    const fairness = new NamespaceFairness({ budget: { steps: 100_000, ms: 1e6 }, now: () => 0 });
    const heavyRule = await fairness.run('team', (budget) => {
      budget.beginRule();
      expect(() => budget.charge(20_000)).toThrow(/rule budget exhausted/);
      budget.endRule();
    });
    expect(heavyRule.budget.exhausted).toBeNull();
    expect(heavyRule.demotion).toBeNull();
    // Eleven rules within their shares that exhaust the request together: demoted.
    const together = await fairness.run('crowded', (budget) => {
      for (let i = 0; i < 11; i++) {
        budget.beginRule();
        try {
          budget.charge(9_999);
        } catch {
          // the request ran out
        }
        budget.endRule();
      }
    });
    expect(together.demotion).toBe('budget exhausted');
  });
});
