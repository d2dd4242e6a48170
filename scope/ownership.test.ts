import fc from 'fast-check';
import { JsonObject } from '../util/json';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CONDITION_PREFIX, NAME_LABEL, SELECTOR_MARK } from './compute';
import { defaultConfigured } from './defaults';
import {
  compareVersions,
  CONFIGURED_ANNOTATION,
  decide,
  liveCovers,
  narrowingBlocked,
  readLive,
  Replica,
  SCOPE_ANNOTATION,
  PendingRule,
  ScopeStamp,
  stampAnnotations,
  stampCarries,
} from './ownership';
import { dragnetOf, scopeHash, readScope, withScope } from './entry';
import { Scope } from './types';

const narrow = (resource: string): Scope => ({
  ...defaultConfigured(),
  rules: [
    { apiGroups: ['*'], apiVersions: ['*'], resources: [resource], operations: ['CREATE'], scope: '*' },
  ],
});

/** A MutatingWebhookConfiguration holding a dragnet with `reg`, stamped when a stamp is given. */
function config(reg: Scope, stamp?: ScopeStamp, configured = defaultConfigured()): JsonObject {
  const webhook = withScope({ name: 'dragnet.kubemod.io', clientConfig: { caBundle: 'Q0E=' } }, reg);
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: {
      name: 'kubemod-mutating-webhook-configuration',
      annotations: stamp ? stampAnnotations(stamp, configured) : {},
    },
    webhooks: [{ name: 'mmodrule.kubemod.io' }, webhook],
  };
}

/** The stamp of a write of `reg` at a rules version by a writer. */
function stampOf(reg: Scope, rulesVersion: string, writer: string): ScopeStamp {
  return { hash: scopeHash(reg), rulesVersion, writer, mode: 'rules' };
}

function live(c: JsonObject) {
  return readLive(c, dragnetOf(c)!.webhook);
}

describe('ownership of the live registration', () => {
  test('the bundle configuration in config/ is the default configured net', () => {
    const text = readFileSync(
      join(__dirname, '..', 'config', 'webhook', 'mutating_webhook_configuration.yaml'),
      'utf8',
    );
    const doc = parseAllDocuments(text)[0].toJSON() as JsonObject;
    expect(readScope(dragnetOf(doc)!.webhook)).toEqual(defaultConfigured());
  });

  test('a registration nobody stamped is the configured net; a stamped one keeps the configured net it was made from', () => {
    const fresh = live(config(defaultConfigured()));
    expect(fresh.ours).toBe(false);
    expect(fresh.configured).toEqual(defaultConfigured());
    const reg = narrow('deployments');
    const stamp = stampOf(reg, '10', '1-a');
    const mine = live(config(reg, stamp));
    expect(mine.ours).toBe(true);
    expect(mine.configured).toEqual(defaultConfigured());
    // Someone edits the live rules (or re-applies the bundle): their registration is the configured net now.
    const edited = live(config(narrow('pods'), stamp));
    expect(edited.ours).toBe(false);
    expect(edited.configured).toEqual(narrow('pods'));
    expect(edited.stamp).toEqual(stamp);
  });

  test('what a kubectl apply of the bundle leaves of an earlier scope is not taken for the configured net', () => {
    // kubectl apply replaces the rules but keeps selector requirements and conditions its manifest never had.
    const leftover: Scope = {
      ...defaultConfigured(),
      namespaceSelector: {
        matchExpressions: [
          ...defaultConfigured().namespaceSelector.matchExpressions!,
          { key: NAME_LABEL, operator: 'In', values: ['shop', SELECTOR_MARK] },
        ],
      },
      matchConditions: [
        { name: 'mine', expression: 'true' },
        { name: `${CONDITION_PREFIX}0`, expression: 'false' },
      ],
    };
    const stamp: ScopeStamp = { hash: 'other', rulesVersion: '10', writer: '1-a', mode: 'rules' };
    const l = live(config(leftover, stamp));
    expect(l.ours).toBe(false);
    expect(l.configured).toEqual({
      ...defaultConfigured(),
      matchConditions: [{ name: 'mine', expression: 'true' }],
    });
  });

  test('an unreadable stamp or configured annotation means someone else wrote it', () => {
    const c = config(narrow('deployments'));
    (c.metadata as JsonObject).annotations = {
      [SCOPE_ANNOTATION]: '{not json',
      [CONFIGURED_ANNOTATION]: 'x',
    };
    expect(live(c).ours).toBe(false);
    expect(live(c).configured).toEqual(narrow('deployments'));
  });

  test('compares resourceVersions as Kubernetes does: well-formed integers only', () => {
    expect(compareVersions('9', '10')).toBe(-1);
    expect(compareVersions('100', '99')).toBe(1);
    expect(compareVersions('42', '42')).toBe(0);
    expect(compareVersions('042', '41')).toBe(0);
    expect(compareVersions('abc', '1')).toBe(0);
  });

  test('writes forward only: newer rules, else a later writer; never behind the stamp', () => {
    const reg = narrow('deployments');
    const stamp = stampOf(reg, '10', '200-b');
    const l = live(config(reg, stamp));
    const me = (rulesVersion: string, writer: string): Replica => ({ rulesVersion, writer, mode: 'rules' });
    expect(decide(l, reg, me('11', '100-a'))).toEqual({ write: false, reason: 'current' });
    expect(decide(l, narrow('pods'), me('9', '300-c'))).toEqual({ write: false, reason: 'behind' });
    expect(decide(l, narrow('pods'), me('11', '100-a'))).toEqual({ write: true, reason: 'newer-rules' });
    expect(decide(l, narrow('pods'), me('10', '100-a'))).toEqual({ write: false, reason: 'older-writer' });
    expect(decide(l, narrow('pods'), me('10', '300-c'))).toEqual({ write: true, reason: 'newer-writer' });
    expect(decide(l, narrow('pods'), me('10', '200-b'))).toEqual({ write: true, reason: 'own-update' });
    // Someone else's registration is taken over, unless this replica has not seen the rules the last stamp had.
    const foreign = live(config(narrow('secrets'), stamp));
    expect(decide(foreign, narrow('pods'), me('10', '100-a'))).toEqual({ write: true, reason: 'foreign' });
    expect(decide(foreign, narrow('pods'), me('9', '100-a'))).toEqual({ write: false, reason: 'behind' });
  });

  test('at equal rules, a replica that saw a later change of the native policies writes; one behind them waits', () => {
    const reg = narrow('deployments');
    const stamp: ScopeStamp = { ...stampOf(reg, '10', '200-b'), nativeVersion: '50' };
    const l = live(config(reg, stamp));
    const me = (writer: string, nativeVersion?: string): Replica => ({
      rulesVersion: '10',
      writer,
      mode: 'rules',
      ...(nativeVersion ? { nativeVersion } : {}),
    });
    // A policy deleted behind the operators' backs (version 60): the older replica widens, the writer is gone.
    expect(decide(l, narrow('pods'), me('100-a', '60'))).toEqual({ write: true, reason: 'newer-native' });
    // Not yet seen what the writer saw: its view of native rules may be stale, it waits.
    expect(decide(l, narrow('pods'), me('300-c', '40'))).toEqual({ write: false, reason: 'behind' });
    // Same view of the policies (or none known): the writers' order decides, as before.
    expect(decide(l, narrow('pods'), me('100-a', '50'))).toEqual({ write: false, reason: 'older-writer' });
    expect(decide(l, narrow('pods'), me('300-c'))).toEqual({ write: true, reason: 'newer-writer' });
    // Newer rules win whatever the policies.
    expect(decide(l, narrow('pods'), { ...me('100-a', '1'), rulesVersion: '11' })).toEqual({
      write: true,
      reason: 'newer-rules',
    });
    // The writer itself waits when its stamp carries a later change than it saw (a widening carried it forward).
    const widened = live(config(reg, { ...stamp, writer: '100-a' }));
    expect(decide(widened, narrow('pods'), me('100-a', '40'))).toEqual({ write: false, reason: 'behind' });
    expect(decide(widened, narrow('pods'), me('100-a', '50'))).toEqual({ write: true, reason: 'own-update' });
    // The stamp keeps the native version across a round trip through the annotation.
    expect(live(config(reg, stamp)).stamp?.nativeVersion).toBe('50');
  });

  test("covers a rule once the stamp has reached its version; someone else's registration is the wide net", () => {
    const reg = narrow('deployments');
    const stamp = stampOf(reg, '10', '1-a');
    expect(liveCovers(live(config(reg, stamp)), '10')).toBe(true);
    expect(liveCovers(live(config(reg, stamp)), '11')).toBe(false);
    expect(liveCovers(live(config(narrow('pods'), stamp)), '11')).toBe(true);
  });

  test('replicas writing in any order converge without flapping', () => {
    // Each replica has its own rules version (stores at different points) and its own view of the scope; the live
    // registration is whatever was written last. Replicas decide in a random order, then round-robin until a whole
    // round writes nothing: that must happen, after few writes.
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            version: fc.integer({ min: 1, max: 5 }),
            view: fc.constantFrom('a', 'b', 'c'),
            native: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
          }),
          {
            minLength: 2,
            maxLength: 4,
          },
        ),
        fc.array(fc.nat(), { maxLength: 40 }),
        (replicas, order) => {
          let current = config(defaultConfigured());
          let writes = 0;
          const step = (i: number): boolean => {
            const n = replicas[i].native;
            const me: Replica = {
              rulesVersion: String(replicas[i].version),
              writer: `${i + 1}-r`,
              mode: 'rules',
              ...(n !== undefined ? { nativeVersion: String(n) } : {}),
            };
            const desired = narrow(`r-${replicas[i].view}`);
            if (!decide(live(current), desired, me).write) return false;
            const stamp: ScopeStamp = { hash: scopeHash(desired), ...me };
            current = config(desired, stamp);
            writes++;
            return true;
          };
          for (const pick of order) step(pick % replicas.length);
          let rounds = 0;
          for (let wrote = true; wrote; rounds++) {
            wrote = false;
            for (let i = 0; i < replicas.length; i++) wrote = step(i) || wrote;
            expect(rounds).toBeLessThan(replicas.length + 2);
          }
          // Writes only move forward in (rules version, writer) order: a handful per replica, never a loop.
          expect(writes).toBeLessThanOrEqual(replicas.length * 6 + 1);
          // The newest store's view won (it is safe: it has every rule the others saw).
          const newest = Math.max(...replicas.map((r) => r.version));
          const winners = replicas.filter((r) => r.version === newest).map((r) => `r-${r.view}`);
          expect(winners).toContain(readScope(dragnetOf(current)!.webhook).rules[0].resources[0]);
        },
      ),
    );
  });
});

describe('a registration widened for rules not stored yet, or held at the configured net', () => {
  const wide: Scope = {
    ...defaultConfigured(),
    rules: [
      {
        apiGroups: ['*'],
        apiVersions: ['*'],
        resources: ['configmaps', 'pods'],
        operations: ['CREATE'],
        scope: '*',
      },
    ],
  };
  const me: Replica = { rulesVersion: '20', writer: '9-z', mode: 'rules' };
  const stamped = (extra: Partial<ScopeStamp>) =>
    live(config(wide, { ...stampOf(wide, '10', '1-a'), ...extra }));

  test('the stamp keeps its pending rules and hold through the annotation', () => {
    const l = stamped({ pending: [{ uid: 'u1', generation: 2, until: 5000 }], hold: 7000, reason: 'x' });
    expect(l.ours).toBe(true);
    expect(l.stamp).toMatchObject({
      pending: [{ uid: 'u1', generation: 2, until: 5000 }],
      hold: 7000,
      reason: 'x',
    });
  });

  test('a replica started a moment ago widens but does not narrow (a peer may have answered an admission it never heard of)', () => {
    const l = stamped({});
    const none = () => false;
    expect(decide(l, narrow('configmaps'), me, { now: 1000, landed: none, narrowFrom: 5000 })).toEqual({
      write: false,
      reason: 'starting',
    });
    expect(decide(l, narrow('configmaps'), me, { now: 5000, landed: none, narrowFrom: 5000 }).write).toBe(
      true,
    );
    const wider: Scope = {
      ...wide,
      rules: [{ ...wide.rules[0], resources: ['configmaps', 'pods', 'secrets'] }],
    };
    expect(decide(l, wider, me, { now: 1000, landed: none, narrowFrom: 5000 }).write).toBe(true);
  });

  test('no replica narrows away a rule pending elsewhere until its store has it or its time is up', () => {
    const l = stamped({ pending: [{ uid: 'u1', generation: 2, until: 5000 }] });
    const narrower = narrow('configmaps');
    const none = () => false;
    expect(decide(l, narrower, me, { now: 1000, landed: none })).toEqual({ write: false, reason: 'pending' });
    // Its store has the rule at that generation (or newer): it computes from it, and may narrow what else is gone.
    expect(decide(l, narrower, me, { now: 1000, landed: (u, g) => u === 'u1' && g >= 2 }).write).toBe(true);
    expect(decide(l, narrower, me, { now: 1000, landed: (u, g) => u === 'u1' && g >= 3 }).write).toBe(false);
    expect(decide(l, narrower, me, { now: 6000, landed: none }).write).toBe(true);
    // Widening is never held back.
    const wider: Scope = {
      ...wide,
      rules: [{ ...wide.rules[0], resources: ['configmaps', 'pods', 'secrets'] }],
    };
    expect(decide(l, wider, me, { now: 1000, landed: none }).write).toBe(true);
  });

  test('a held configured net stays until its hold time', () => {
    const l = stamped({ hold: 5000 });
    expect(decide(l, narrow('pods'), me, { now: 4999, landed: () => true })).toEqual({
      write: false,
      reason: 'held',
    });
    expect(decide(l, narrow('pods'), me, { now: 5001, landed: () => true }).write).toBe(true);
  });
});

describe('stampCarries', () => {
  const stamp = (pending: PendingRule[]): ScopeStamp => ({
    hash: 'h',
    rulesVersion: '5',
    writer: 'w',
    mode: 'rules',
    pending,
  });
  it('counts a version its stamp carries with the same spec, or a later generation', () => {
    const s = stamp([{ uid: 'u1', generation: 2, until: 1, spec: 'a' }]);
    expect(stampCarries(s, { uid: 'u1', generation: 2, spec: 'a' })).toBe(true);
    expect(stampCarries(s, { uid: 'u1', generation: 1, spec: 'x' })).toBe(true);
    expect(stampCarries(s, { uid: 'u2', generation: 1, spec: 'a' })).toBe(false);
  });
  it("does not count another spec of the same version (two writes admitted at once: the simulation's seed 543)", () => {
    const s = stamp([{ uid: 'u1', generation: 2, until: 1, spec: 'a' }]);
    expect(stampCarries(s, { uid: 'u1', generation: 2, spec: 'b' })).toBe(false);
    // A stamp of an earlier release, without specs, proves nothing at the same generation.
    expect(
      stampCarries(stamp([{ uid: 'u1', generation: 2, until: 1 }]), { uid: 'u1', generation: 2, spec: 'a' }),
    ).toBe(false);
    expect(stampCarries(null, { uid: 'u1', generation: 2 })).toBe(false);
  });
  it('reads the spec back from the annotation', () => {
    const reg = narrow('configmaps');
    const written = {
      ...stampOf(reg, '5', 'w'),
      pending: [{ uid: 'u1', generation: 2, until: 9, spec: 'a' }],
    };
    const c = config(reg, written);
    const back = readLive(c, dragnetOf(c)!.webhook).stamp;
    expect(back?.pending).toEqual([{ uid: 'u1', generation: 2, until: 9, spec: 'a' }]);
  });
});

describe('stamp times on the reader clock', () => {
  const reg = narrow('configmaps');
  const written: ScopeStamp = {
    ...stampOf(reg, '5', 'w'),
    at: 1_000_000,
    hold: 1_060_000,
    pending: [{ uid: 'u1', generation: 1, until: 1_030_000 }],
  };
  it("moves hold and pending times by what separates the writer's clock from the reader's", () => {
    const c = config(reg, written);
    // A reader whose clock runs 40 s ahead first sees the stamp as written.
    const ahead = readLive(c, dragnetOf(c)!.webhook, 1_040_000).stamp!;
    expect(ahead.hold).toBe(1_100_000);
    expect(ahead.pending?.[0].until).toBe(1_070_000);
    // Read so, the pending rule still blocks narrowing 29 s later on that clock (read raw, it had expired).
    const ctx = { now: 1_069_000, landed: () => false };
    expect(narrowingBlocked(ahead, ctx)).toEqual({ reason: 'held', until: 1_100_000 });
    expect(narrowingBlocked({ ...ahead, hold: undefined }, ctx)).toEqual({
      reason: 'pending',
      until: 1_070_000,
    });
    expect(narrowingBlocked({ ...written, hold: undefined }, ctx)).toBeNull();
  });
  it('leaves a stamp without the writer time (an earlier release) as it is', () => {
    const { at: _at, ...old } = written;
    const c = config(reg, old);
    expect(readLive(c, dragnetOf(c)!.webhook, 5).stamp?.hold).toBe(1_060_000);
  });
});
