import { JsonObject } from '../../util/json';
import { ReadyGate } from './ready-gate';
import { HELD_WIDE_REASON, NOT_IN_FORCE_REASON, ScopeStatus } from './status';
import { Facet, StatusFacets } from '../status/facets';
import { StatusSink } from '../status/reporter';
import { eventually } from '../testing/eventually';
import { labelRule } from '../testing/objects';

/** Records the registration facets as the reporter would compose them. */
class Facets implements StatusFacets {
  readonly now = new Map<string, Facet>();
  set(namespace: string, name: string, _source: string, facet: Facet): void {
    this.now.set(`${namespace}/${name}`, facet);
  }
  clear(namespace: string, name: string): void {
    this.now.delete(`${namespace}/${name}`);
  }
}

describe('the registration facet', () => {
  test('every valid rule says so while the registration is held at the configured net, and why; cleared after', async () => {
    const facets = new Facets();
    let held: string | null = null;
    const status = new ScopeStatus(facets, { heldWide: () => held }, 20);
    status.start();
    status.setRules(['team-a/one', 'team-b/two']);
    expect(facets.now.size).toBe(0);
    held = 'the API server refused the dragnet registration: denied by policy';
    await eventually(() => expect(facets.now.size).toBe(2));
    expect(facets.now.get('team-a/one')).toEqual({
      condition: {
        type: 'WideFallback',
        reason: HELD_WIDE_REASON,
        message: expect.stringMatching(
          /^the dragnet registration is held at the configured net\. the API server refused the dragnet registration: denied by policy; the rule is in force/,
        ),
      },
    });
    held = null;
    await eventually(() => expect(facets.now.size).toBe(0));
    status.stop();
  });

  test('a rule the registration does not send for too long is shown not in force (Ready False), then Ready', async () => {
    const facets = new Facets();
    const status = new ScopeStatus(facets, { heldWide: () => null }, 1000);
    status.start();
    const reported: string[] = [];
    const sink: StatusSink = {
      report: (r) => void reported.push(String((r.metadata as JsonObject).name)),
      forget: () => undefined,
    };
    let covered = false;
    const listeners: Array<() => void> = [];
    const gate = new ReadyGate(
      sink,
      { covers: () => covered, onChange: (l) => (listeners.push(l), () => undefined) },
      undefined,
      { status, why: () => 'it cannot be written: forbidden', afterMs: 100 },
    );
    const rule = {
      ...labelRule('team-a', 'late'),
      metadata: { name: 'late', namespace: 'team-a', resourceVersion: '7' },
    };
    gate.report(rule, []);
    expect(reported).toEqual([]);
    await eventually(() => expect(reported).toEqual(['late']));
    expect(facets.now.get('team-a/late')?.ready).toEqual({
      status: 'False',
      reason: NOT_IN_FORCE_REASON,
      message: 'the dragnet registration does not send its objects yet: it cannot be written: forbidden',
    });
    covered = true;
    listeners.forEach((l) => l());
    expect(facets.now.has('team-a/late')).toBe(false);
    expect(reported).toEqual(['late', 'late']);
    gate.stop();
    status.stop();
  });
  test('a rule shown not in force says why as it is now, not as it was when first shown', async () => {
    const facets = new Facets();
    const status = new ScopeStatus(facets, { heldWide: () => null }, 1000);
    status.start();
    const sink: StatusSink = { report: () => undefined, forget: () => undefined };
    let why = 'it cannot be written: connect ECONNREFUSED 127.0.0.1:6443';
    const gate = new ReadyGate(sink, { covers: () => false, onChange: () => () => undefined }, undefined, {
      status,
      why: () => why,
      afterMs: 100,
    });
    gate.report(
      {
        ...labelRule('team-a', 'late'),
        metadata: { name: 'late', namespace: 'team-a', resourceVersion: '7' },
      },
      [],
    );
    const message = () => facets.now.get('team-a/late')?.ready?.message;
    await eventually(() => expect(message()).toMatch(/ECONNREFUSED/));
    // The API server is back; the registration is written but not proven in force yet.
    why = 'the API server has not applied it yet';
    await eventually(() =>
      expect(message()).toBe(
        'the dragnet registration does not send its objects yet: the API server has not applied it yet',
      ),
    );
    gate.stop();
    status.stop();
  });
  test('a status write to a rule in force is not held again (same spec, new resourceVersion); a spec change is', () => {
    const reported: string[] = [];
    const sink: StatusSink = {
      report: (r) => void reported.push(String((r.metadata as JsonObject).resourceVersion)),
      forget: () => undefined,
    };
    let covered = true;
    const gate = new ReadyGate(sink, { covers: () => covered, onChange: () => () => undefined });
    const at = (resourceVersion: string, generation: number) => ({
      ...labelRule('team-a', 'native'),
      metadata: { name: 'native', namespace: 'team-a', uid: 'u-1', generation, resourceVersion },
    });
    gate.report(at('7', 1), []);
    // The registration's computation is behind (an API server restart, a backoff): status writes pass at once.
    covered = false;
    gate.report(at('8', 1), []);
    expect(reported).toEqual(['7', '8']);
    // An edit of the spec waits for the registration again.
    gate.report(at('9', 2), []);
    expect(reported).toEqual(['7', '8']);
    expect(gate.waiting).toBe(1);
    gate.stop();
  });
  test("another replica's status writes do not move what a held rule waits for (the version its spec was first seen at)", () => {
    const reported: string[] = [];
    const sink: StatusSink = {
      report: (r) => void reported.push(String((r.metadata as JsonObject).resourceVersion)),
      forget: () => undefined,
    };
    // This replica's registration covers rules up to resourceVersion 10.
    let coveredUpTo = 0;
    const listeners: Array<() => void> = [];
    const gate = new ReadyGate(sink, {
      covers: (v) => Number(v) <= coveredUpTo,
      onChange: (l) => (listeners.push(l), () => undefined),
    });
    const at = (resourceVersion: string) => ({
      ...labelRule('team-a', 'team'),
      metadata: { name: 'team', namespace: 'team-a', uid: 'u-1', generation: 1, resourceVersion },
    });
    gate.report(at('10'), []);
    // The other replica writes the status again and again: 11, 12, ... (same spec).
    for (let v = 11; v <= 20; v++) gate.report(at(String(v)), []);
    expect(reported).toEqual([]);
    coveredUpTo = 10;
    listeners.forEach((l) => l());
    // Let through with the latest version it holds, though the registration was computed at 10 only.
    expect(reported).toEqual(['20']);
    gate.stop();
  });
});
