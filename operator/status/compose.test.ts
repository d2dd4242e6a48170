import { JsonObject } from '../../util/json';
import { composeStatus, ComposeInput, statusPatch, statusUpToDate } from './compose';
import { Facet, FacetSource, holdOf, isoSeconds, summaryOf } from './facets';

const NOW = Date.parse('2026-11-23T10:00:00Z');
const T0 = '2026-11-23T09:00:00Z';

function input(facets: Partial<Record<FacetSource, Facet>>, over: Partial<ComposeInput> = {}): ComposeInput {
  return {
    generation: 3,
    problems: [],
    facets: new Map(Object.entries(facets) as Array<[FacetSource, Facet]>),
    current: {},
    instance: 'replica-a',
    now: NOW,
    ...over,
  };
}

const ready = (c: ReturnType<typeof composeStatus>) => c.status.conditions[0] as JsonObject;
const condition = (c: ReturnType<typeof composeStatus>, type: string) =>
  c.status.conditions.find((x) => x.type === type) as JsonObject | undefined;

const unknownKind: Facet = {
  condition: {
    type: 'UnknownKind',
    reason: 'KindNotServed',
    message: 'kind Deploymnet is not served (did you mean Deployment?). The net takes every resource of team',
  },
};
const failing = (until: number, replica = 'replica-a'): Facet => ({
  condition: {
    type: 'Failing',
    reason: 'RunTimeErrors',
    message: `failing at run time: 2 errors in the last 5m. Reported until ${isoSeconds(until)} on replica ${replica}`,
  },
});
const quarantined = (until: number, replica = 'replica-a'): Facet => ({
  ready: {
    status: 'False',
    reason: 'Degraded',
    message: `quarantined until ${isoSeconds(until)} on replica ${replica}: ran out of its share`,
  },
});
const native: Facet = {
  ready: {
    status: 'True',
    reason: 'Native',
    message: 'served by the API server (MutatingAdmissionPolicy x)',
  },
  servedBy: 'Native',
};

describe('composeStatus: a ModRule status from its facets', () => {
  it('is Ready/Valid "in effect" and served by the webhook for a valid rule nobody says anything about', () => {
    const c = composeStatus(input({}));
    expect(c.status).toEqual({
      observedGeneration: 3,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Valid',
          message: 'ModRule is valid and in effect',
          observedGeneration: 3,
        },
      ],
      servedBy: 'Webhook',
    });
    expect(c.recheckAt).toBeUndefined();
  });

  it('is Invalid with the problems, whatever the facets say, and servedBy is left out', () => {
    const c = composeStatus(
      input(
        { serving: native, quarantine: quarantined(NOW + 60_000) },
        {
          problems: [{ field: 'spec.match[0].matchRegex', message: 'invalid regex' }],
        },
      ),
    );
    expect(ready(c)).toMatchObject({
      status: 'False',
      reason: 'Invalid',
      message: 'spec.match[0].matchRegex: invalid regex',
    });
    expect(c.status.servedBy).toBeUndefined();
  });

  it('takes reason, message and servedBy from the serving facet', () => {
    const c = composeStatus(input({ serving: native }));
    expect(ready(c)).toMatchObject({ status: 'True', reason: 'Native', message: native.ready!.message });
    expect(c.status.servedBy).toBe('Native');
  });

  it('lets a facet that takes Ready False win over one that keeps it True, and names the other problems after it', () => {
    const c = composeStatus(input({ serving: native, quarantine: quarantined(NOW + 60_000), unknownKind }));
    expect(ready(c)).toMatchObject({ status: 'False', reason: 'Degraded' });
    expect(ready(c).message).toMatch(
      /^quarantined until 2026-11-23T10:01:00Z on replica replica-a: ran out of its share; also kind Deploymnet is not served \(did you mean Deployment\?\)$/,
    );
    expect(c.status.servedBy).toBe('Native');
  });

  it('keeps a rule with problems Ready=True and names them first, most important first', () => {
    const c = composeStatus(input({ failing: failing(NOW + 300_000), unknownKind, serving: native }));
    expect(ready(c)).toMatchObject({
      status: 'True',
      reason: 'Native',
      message:
        'in effect, but kind Deploymnet is not served (did you mean Deployment?); failing at run time: 2 errors ' +
        'in the last 5m; served by the API server (MutatingAdmissionPolicy x)',
    });
    expect(c.status.conditions.map((x) => x.type)).toEqual(['Ready', 'UnknownKind', 'Failing']);
    expect(condition(c, 'UnknownKind')).toEqual({
      type: 'UnknownKind',
      status: 'True',
      reason: 'KindNotServed',
      message: unknownKind.condition!.message,
      observedGeneration: 3,
    });
  });

  it('turns a cleared condition False and keeps it; one never set is absent', () => {
    const current = {
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Valid', message: 'x', lastTransitionTime: T0 },
        {
          type: 'UnknownKind',
          status: 'True',
          reason: 'KindNotServed',
          message: 'y',
          lastTransitionTime: T0,
        },
      ],
    };
    const c = composeStatus(input({}, { current }));
    expect(c.status.conditions.map((x) => `${x.type}=${x.status}`)).toEqual([
      'Ready=True',
      'UnknownKind=False',
    ]);
    expect(condition(c, 'UnknownKind')).toMatchObject({ reason: 'KindsServed' });
    const patch = statusPatch(current, c.status, new Date(NOW));
    const written = (patch.status as JsonObject).conditions as JsonObject[];
    expect(written.map((x) => x.lastTransitionTime)).toEqual([T0, '2026-11-23T10:00:00Z']);
  });

  it('keeps conditions of types it does not own as they are', () => {
    const theirs = {
      type: 'Reconciled',
      status: 'True',
      reason: 'ByOtherTool',
      message: 'm',
      lastTransitionTime: T0,
    };
    const c = composeStatus(input({}, { current: { conditions: [theirs] } }));
    expect(c.status.conditions).toEqual([expect.objectContaining({ type: 'Ready' }), theirs]);
  });
});

describe("composeStatus: another replica's per-replica word", () => {
  const carriedDegraded = (until: number, replica = 'replica-b', generation = 3) => ({
    type: 'Ready',
    status: 'False',
    reason: 'Degraded',
    message: `quarantined until ${isoSeconds(until)} on replica ${replica}: ran out of its share`,
    observedGeneration: generation,
    lastTransitionTime: T0,
  });

  it('leaves it alone until the time it names, and says when to look again', () => {
    const theirs = carriedDegraded(NOW + 30_000);
    const c = composeStatus(input({}, { current: { observedGeneration: 3, conditions: [theirs] } }));
    expect(ready(c)).toBe(theirs);
    expect(c.recheckAt).toBe(NOW + 30_000);
    expect(
      statusUpToDate({ observedGeneration: 3, conditions: [theirs], servedBy: 'Webhook' }, c.status),
    ).toBe(true);
  });

  it('takes it back once lapsed, on another generation, or when it is its own', () => {
    for (const theirs of [
      carriedDegraded(NOW - 1_000),
      carriedDegraded(NOW + 30_000, 'replica-b', 2),
      carriedDegraded(NOW + 30_000, 'replica-a'),
    ]) {
      const c = composeStatus(input({}, { current: { conditions: [theirs] } }));
      expect(ready(c)).toMatchObject({ status: 'True', reason: 'Valid' });
      expect(c.recheckAt).toBeUndefined();
    }
  });

  it('converges on the later of two replicas quarantining the same rule', () => {
    const theirs = carriedDegraded(NOW + 30_000);
    const earlier = composeStatus(
      input({ quarantine: quarantined(NOW + 10_000) }, { current: { conditions: [theirs] } }),
    );
    expect(ready(earlier)).toBe(theirs);
    const later = composeStatus(
      input({ quarantine: quarantined(NOW + 60_000) }, { current: { conditions: [theirs] } }),
    );
    expect(ready(later).message).toMatch(/on replica replica-a/);
  });

  it("lets a facet that is not per-replica override it (it is this cluster's state, not a replica's)", () => {
    const registration: Facet = {
      ready: { status: 'False', reason: 'NotInForce', message: 'registration refused' },
    };
    const c = composeStatus(
      input({ registration }, { current: { conditions: [carriedDegraded(NOW + 30_000)] } }),
    );
    expect(ready(c)).toMatchObject({ reason: 'NotInForce' });
  });

  it('holds a Failing condition of another replica, and both replicas then compose the same status (no ping-pong)', () => {
    const onA = composeStatus(input({ failing: failing(NOW + 300_000) }));
    const current = JSON.parse(
      JSON.stringify(statusPatch({}, onA.status, new Date(NOW)).status),
    ) as JsonObject;
    const onB = composeStatus(input({}, { current, instance: 'replica-b' }));
    expect(statusUpToDate(current, onB.status)).toBe(true);
    expect(onB.recheckAt).toBe(NOW + 300_000);
    // Once lapsed, B clears it.
    const later = composeStatus(input({}, { current, instance: 'replica-b', now: NOW + 301_000 }));
    expect(condition(later, 'Failing')).toMatchObject({ status: 'False', reason: 'NotFailing' });
    expect(ready(later).message).toBe('ModRule is valid and in effect');
  });
});

describe('statusUpToDate and statusPatch', () => {
  it('see a difference in any condition, servedBy or observedGeneration, and keep lastTransitionTime per condition', () => {
    const c = composeStatus(input({ unknownKind }));
    const written = statusPatch({}, c.status, new Date(NOW)).status as JsonObject;
    expect(statusUpToDate(written, c.status)).toBe(true);
    expect(statusUpToDate({ ...written, observedGeneration: 2 }, c.status)).toBe(false);
    expect(statusUpToDate({ ...written, servedBy: 'Native' }, c.status)).toBe(false);
    expect(statusUpToDate({ ...written, servedBy: null }, c.status)).toBe(false);
    const next = composeStatus(input({ unknownKind, failing: failing(NOW + 1000) }, { current: written }));
    expect(statusUpToDate(written, next.status)).toBe(false);
    const again = statusPatch(written, next.status, new Date(NOW + 5_000)).status as JsonObject;
    expect((again.conditions as JsonObject[]).map((x) => x.lastTransitionTime)).toEqual([
      '2026-11-23T10:00:00Z',
      '2026-11-23T10:00:00Z',
      '2026-11-23T10:00:05Z',
    ]);
    expect(again).toMatchObject({ observedGeneration: 3, servedBy: 'Webhook' });
  });
});

describe('holdOf and summaryOf', () => {
  it('read a per-replica word and the first sentence', () => {
    expect(holdOf('quarantined until 2026-11-23T10:01:00Z on replica modrule-7d9f: ...')).toEqual({
      until: NOW + 60_000,
      replica: 'modrule-7d9f',
    });
    expect(holdOf('kind X is not served')).toBeNull();
    expect(summaryOf('one thing. Then details. More')).toBe('one thing');
    expect(summaryOf('just one.')).toBe('just one');
  });
});
