import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { CompiledRule } from '../../rule/compile';
import { ResourceCatalog } from '../../scope/catalog';
import { readLive, stampAnnotations } from '../../scope/ownership';
import { dragnetOf, scopeHash, readScope, withScope } from '../../scope/entry';
import { sendsRequest } from '../../scope/sends';
import { request } from '../../scope/testing';
import { RuleStore } from '../../store/rules';
import { AdmittedRules, RuleVersion } from '../rules/admitted';
import { ScopeController } from './controller';
import { createKubeClient } from '../../kube/kube';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { modRule } from '../testing/objects';
import { CONFIGURATION, installedConfiguration, LoadedConfiguration } from '../testing/probed-cluster';

const catalog = { catalog: () => ResourceCatalog.builtin(), onChange: () => () => undefined };

function kindRule(namespace: string, name: string, kind: string): JsonObject {
  return modRule(namespace, name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: kind }],
    patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
  });
}

/** One operator replica's scope side: its store, its admitted rules, its ScopeController. */
class Replica {
  readonly store = new RuleStore({ clusterNamespace: 'kubemod-system', keepSource: false });
  readonly registry = new Registry();
  readonly admitted: AdmittedRules;
  readonly scope: ScopeController;
  version = 10;

  constructor(fake: FakeApiServer, options: Partial<ConstructorParameters<typeof ScopeController>[0]> = {}) {
    const client = createKubeClient(fake.access());
    this.admitted = new AdmittedRules({
      client,
      logger: silentLogger(),
      clusterNamespace: 'kubemod-system',
      checkAfterMs: 60_000,
    });
    this.scope = new ScopeController({
      client,
      logger: silentLogger(),
      mode: 'rules',
      clusterNamespace: 'kubemod-system',
      rules: () => [...this.store.allRules(), ...this.admitted.rules()],
      rulesVersion: () => String(this.version),
      rulesReady: () => true,
      onRulesChange: (l) => this.store.onChange(l),
      discovery: catalog,
      registry: this.registry,
      admitted: this.admitted,
      probeNamespace: 'kubemod-system',
      debounceMs: 10,
      settleMs: 5000,
      ...options,
    });
    this.scope.start();
  }

  /** Stores a rule as the informer would deliver it (after the API server stored it). */
  land(rule: JsonObject, uid: string): void {
    const stored = {
      ...rule,
      metadata: {
        ...(rule.metadata as JsonObject),
        uid,
        generation: 1,
        resourceVersion: String(++this.version),
      },
    };
    expect(this.store.upsertRule(stored)).toEqual([]);
    this.admitted.handlers().upsert(stored);
  }

  /** Takes a rule out of the store as the informer would deliver its deletion. */
  unland(rule: JsonObject, uid: string): void {
    const m = rule.metadata as JsonObject;
    this.store.deleteRule(String(m.namespace), String(m.name));
    this.admitted.handlers().remove({ ...rule, metadata: { ...m, uid } });
  }

  /** The admission of a new rule: counted as admitted, then ensured; resolves with the outcome and its time. */
  async admit(rule: JsonObject, budgetMs = 3000) {
    const uid = randomUUID();
    const m = rule.metadata as JsonObject;
    const version: RuleVersion = { namespace: String(m.namespace), name: String(m.name), uid, generation: 1 };
    const compiled: CompiledRule = this.store.compileRule(rule).rule!;
    this.admitted.admit(version, compiled);
    const start = Date.now();
    const outcome = await this.scope.ensure(compiled, start + budgetMs * 0.6, start + budgetMs);
    return { outcome, ms: Date.now() - start, uid };
  }

  async fallbackGauge(): Promise<number> {
    const m = await this.registry.getSingleMetric('modrule_dragnet_scope_wide_fallback')!.get();
    return m.values[0]?.value ?? -1;
  }

  async stop(): Promise<void> {
    this.admitted.stop();
    await this.scope.stop();
  }
}

describe('a ModRule is in force when its admission returns (ScopeController.ensure on the fake API server)', () => {
  let fake: FakeApiServer;
  let loaded: LoadedConfiguration;
  const replicas: Replica[] = [];
  const replica = (options: Partial<ConstructorParameters<typeof ScopeController>[0]> = {}) => {
    const r = new Replica(fake, options);
    replicas.push(r);
    return r;
  };

  const config = () => fake.get('mutatingwebhookconfigurations', null, CONFIGURATION)!;
  const registration = () => readScope(dragnetOf(config())!.webhook);
  const puts = () => fake.requestsTo('PUT', /mutatingwebhookconfigurations/).length;
  /** Whether the registration the API server has loaded sends `kind` objects in `namespace` (rules and selector). */
  const loadedSends = (kind: string, namespace: string) => {
    const reg = readScope(dragnetOf(loaded.loaded()!)!.webhook);
    return sendsRequest({ ...reg, matchConditions: [] }, [], request('CREATE', kind, namespace));
  };

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    fake.put('mutatingwebhookconfigurations', installedConfiguration());
    loaded = new LoadedConfiguration(fake, 80);
  });

  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
    loaded.stop();
    await fake.close();
  });

  /** A replica whose store has a Deployment rule in team-a, once the registration is narrowed to it. */
  async function narrowed(): Promise<Replica> {
    const r = replica();
    r.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    await eventually(() => expect(registration().rules.flatMap((x) => x.resources)).toEqual(['deployments']));
    // The computation its own write's watch event starts has run (it finds nothing to do).
    await new Promise((res) => setTimeout(res, 100));
    return r;
  }

  test('a rule the live registration covers is answered at once: one consistent read, no write, no probe', async () => {
    const r = await narrowed();
    // Long settled (as after the settle time): no probe needed either.
    await new Promise((res) => setTimeout(res, 100));
    const settled = replica({ settleMs: 50 });
    await r.stop();
    replicas.splice(replicas.indexOf(r), 1);
    settled.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    await eventually(() =>
      expect(readLive(config(), dragnetOf(config())!.webhook).stamp?.writer).toBeDefined(),
    );
    await new Promise((res) => setTimeout(res, 200));
    const before = fake.requests.length;
    const { outcome, ms } = await settled.admit(kindRule('team-a', 'more-deployments', 'Deployment'));
    expect(outcome).toEqual({ kind: 'covered' });
    // The read that a narrower registration written a moment ago by another replica cannot hide from.
    expect(fake.requests.slice(before).map((r) => r.method)).toEqual(['GET']);
    expect(ms).toBeLessThan(50);
  });

  test('a rule the registration does not cover: widened, and answered once the API server uses it', async () => {
    const r = await narrowed();
    const before = puts();
    await eventually(() => expect(loadedSends('ConfigMap', 'prod')).toBe(false));
    const { outcome, ms } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'));
    expect(outcome).toEqual({ kind: 'widened' });
    // Its union, and maybe at once the exact computation from the store and the admitted rule.
    expect(puts() - before).toBeGreaterThanOrEqual(1);
    expect(puts() - before).toBeLessThanOrEqual(2);
    // The answer waited for the API server to load it (80 ms after the write here), not a second more.
    expect(loadedSends('ConfigMap', 'prod')).toBe(true);
    expect(loadedSends('Deployment', 'team-a')).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(70);
    expect(ms).toBeLessThan(1000);
    expect(loaded.probes).toBeGreaterThan(0);
  });

  test('a widening keeps the native policy change the registration it widened was written for', async () => {
    const native = (version: string) => ({ policiesVersion: () => version, servingVersion: () => '' });
    const stamp = () => readLive(config(), dragnetOf(config())!.webhook).stamp;
    const a = replica({ native: native('50') });
    a.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    await eventually(() => expect(stamp()?.nativeVersion).toBe('50'));
    await a.stop();
    replicas.splice(replicas.indexOf(a), 1);
    // A replica that has not seen that change (a policy deleted behind the operators' backs) widens for a rule.
    const b = replica({ native: native('40') });
    b.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    const { outcome } = await b.admit(kindRule('prod', 'configmaps', 'ConfigMap'));
    expect(outcome.kind).toBe('widened');
    expect(stamp()?.nativeVersion).toBe('50');
    expect(stamp()?.pending?.length).toBe(1);
  });

  test('the widening is not undone by a computation from a store that does not have the rule yet', async () => {
    const r = await narrowed();
    const { outcome, uid } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'));
    expect(outcome.kind).toBe('widened');
    // Something else changes in the store: the scope computes again, before the new rule is stored.
    r.land(kindRule('team-a', 'pods', 'Pod'), randomUUID());
    await eventually(() => expect(registration().rules.flatMap((x) => x.resources)).toContain('pods'));
    await new Promise((res) => setTimeout(res, 100));
    expect(loadedSends('ConfigMap', 'prod')).toBe(true);
    // Once stored, it stays because the store has it; the union's extras are narrowed away.
    r.land(kindRule('prod', 'configmaps', 'ConfigMap'), uid);
    await eventually(() =>
      expect(
        registration()
          .rules.flatMap((x) => x.resources)
          .sort(),
      ).toEqual(['configmaps', 'deployments', 'pods']),
    );
  });

  test('a registration written elsewhere without a rule admitted here (not stored yet) is widened again', async () => {
    const r = await narrowed();
    const narrow = registration();
    const { outcome } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'));
    expect(outcome.kind).toBe('widened');
    // A replica that started later, at the same rules, whose store has not seen it, writes its own computation.
    const current = config();
    const stamp = {
      hash: scopeHash(narrow),
      rulesVersion: String(r.version),
      writer: '9999999999999-z',
      mode: 'rules' as const,
    };
    const configured = readLive(current, dragnetOf(current)!.webhook).configured;
    const meta = current.metadata as JsonObject;
    fake.put('mutatingwebhookconfigurations', {
      ...current,
      metadata: {
        ...meta,
        annotations: { ...(meta.annotations as JsonObject), ...stampAnnotations(stamp, configured) },
      },
      webhooks: (current.webhooks as JsonObject[]).map((w) =>
        w.name === 'dragnet.kubemod.io' ? withScope(w, narrow) : w,
      ),
    });
    expect(registration().rules.flatMap((x) => x.resources)).toEqual(['deployments']);
    await eventually(
      () => expect(registration().rules.flatMap((x) => x.resources)).toContain('configmaps'),
      2000,
    );
  });

  test('many admissions at once are coalesced into few writes', async () => {
    const r = await narrowed();
    const before = puts();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => r.admit(kindRule(`ns-${i}`, 'configmaps', 'ConfigMap'))),
    );
    expect(outcomes.every((o) => o.outcome.kind === 'widened' || o.outcome.kind === 'covered')).toBe(true);
    expect(puts() - before).toBeLessThanOrEqual(3);
    for (let i = 0; i < 30; i++) expect(loadedSends('ConfigMap', `ns-${i}`)).toBe(true);
  });

  test('an API server that never uses the widened registration: the configured net is put back, and said', async () => {
    const r = await narrowed();
    await new Promise((res) => setTimeout(res, 100));
    loaded.loading = false;
    const { outcome, ms } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'), 1000);
    expect(outcome).toMatchObject({ kind: 'fallback', confirmed: false });
    expect(ms).toBeLessThan(1200);
    expect(readScope(dragnetOf(config())!.webhook).rules[0].resources).toContain('configmaps');
    const stamp = readLive(config(), dragnetOf(config())!.webhook).stamp!;
    expect(stamp.hold).toBeGreaterThan(Date.now());
    expect(stamp.reason).toContain('did not use');
    expect(await r.fallbackGauge()).toBe(1);
    expect(r.scope.heldWide()).toContain('did not use');
    // Held: no replica narrows it meanwhile.
    r.land(kindRule('team-a', 'pods', 'Pod'), randomUUID());
    await new Promise((res) => setTimeout(res, 200));
    expect(registration().rules[0].resources).toContain('secrets');
  });

  test('an API server that refuses every update of the configuration: the rule is refused, with why', async () => {
    const r = await narrowed();
    fake.interceptor = (req) =>
      req.method === 'PUT' && req.path.includes('mutatingwebhookconfigurations')
        ? { status: 422, message: 'denied by a ValidatingAdmissionPolicy' }
        : undefined;
    const { outcome } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'), 1000);
    expect(outcome.kind).toBe('failed');
    expect((outcome as { reason: string }).reason).toContain('denied by a ValidatingAdmissionPolicy');
  });

  test('a configuration without the probe: the answer waits for the settle time instead', async () => {
    fake.put('mutatingwebhookconfigurations', {
      ...installedConfiguration(false),
      metadata: config().metadata,
    });
    const r = replica({ settleMs: 300 });
    r.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    await eventually(() => expect(registration().rules.flatMap((x) => x.resources)).toEqual(['deployments']));
    await new Promise((res) => setTimeout(res, 100));
    const { outcome, ms } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'));
    // Widened by the admission (or by the computation its watch event started: either way a fresh registration).
    expect(['widened', 'covered']).toContain(outcome.kind);
    expect(ms).toBeGreaterThanOrEqual(250);
  });

  test('two replicas admitting rules at once converge, and stop writing', async () => {
    const a = await narrowed();
    const b = replica();
    b.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    await new Promise((res) => setTimeout(res, 100));
    const admitted = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).admit(kindRule(`ns-${i}`, 'secrets', 'Secret'))),
    );
    expect(admitted.every((x) => x.outcome.kind === 'widened' || x.outcome.kind === 'covered')).toBe(true);
    for (let i = 0; i < 10; i++) expect(loadedSends('Secret', `ns-${i}`)).toBe(true);
    // Both stores get every rule; the registration settles and writes stop.
    admitted.forEach((x, i) => {
      for (const r of [a, b]) r.land(kindRule(`ns-${i}`, 'secrets', 'Secret'), x.uid);
    });
    let last = -1;
    for (let i = 0; i < 20 && puts() !== last; i++) {
      last = puts();
      await new Promise((res) => setTimeout(res, 300));
    }
    const settled = puts();
    await new Promise((res) => setTimeout(res, 600));
    expect(puts()).toBe(settled);
    for (let i = 0; i < 10; i++) expect(loadedSends('Secret', `ns-${i}`)).toBe(true);
  });

  test('a scope confirmed once is probed again when it comes back (U, then N, then U again)', async () => {
    const r = await narrowed();
    const first = kindRule('prod', 'configmaps', 'ConfigMap');
    const { outcome, uid } = await r.admit(first);
    expect(outcome.kind).toBe('widened');
    expect(loadedSends('ConfigMap', 'prod')).toBe(true);
    // The rule is stored, then deleted: the scope narrows back to Deployments, and the API server loads that.
    r.land(first, uid);
    r.unland(first, uid);
    await eventually(() => expect(registration().rules.flatMap((x) => x.resources)).toEqual(['deployments']));
    await eventually(() => expect(loadedSends('ConfigMap', 'prod')).toBe(false));
    // The same shape again: the same scope as the first widening, in a new version of the configuration.
    const again = await r.admit(kindRule('prod', 'configmaps-again', 'ConfigMap'));
    expect(again.outcome.kind).toBe('widened');
    expect(loadedSends('ConfigMap', 'prod')).toBe(true);
    expect(again.ms).toBeGreaterThanOrEqual(70);
  });

  test('a scope in place for a while is not in force for that alone: the answer waits for the probe', async () => {
    const r = await narrowed();
    await eventually(() => expect(loadedSends('Deployment', 'team-a')).toBe(true));
    // From now on the API server loads nothing new: it keeps using Deployments only.
    loaded.loading = false;
    const configmaps = kindRule('prod', 'configmaps', 'ConfigMap');
    const uid = randomUUID();
    r.land(configmaps, uid);
    await eventually(() => expect(registration().rules.flatMap((x) => x.resources)).toContain('configmaps'));
    // Far longer than the settle time: a replica started now sees a scope that sends ConfigMaps, long in place.
    await new Promise((res) => setTimeout(res, 300));
    const started = replica({ settleMs: 50 });
    started.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    started.land(configmaps, uid);
    await r.stop();
    replicas.splice(replicas.indexOf(r), 1);
    const { outcome } = await started.admit(kindRule('prod', 'more-configmaps', 'ConfigMap'), 600);
    // Never "covered" while the API server does not send ConfigMaps: the probe says it does not use that version.
    expect(loadedSends('ConfigMap', 'prod')).toBe(false);
    expect(outcome.kind).not.toBe('covered');
    expect(outcome.kind).not.toBe('widened');
  });

  test('a configuration deleted by hand: the rule is refused, with why', async () => {
    const r = await narrowed();
    fake.remove('mutatingwebhookconfigurations', null, CONFIGURATION);
    await eventually(() => expect(r.scope.heldWide() ?? '').toBe(''));
    await new Promise((res) => setTimeout(res, 100));
    const { outcome } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'), 1000);
    expect(outcome.kind).toBe('failed');
    expect((outcome as { reason: string }).reason).toMatch(/not registered/);
  });

  test('probes answered 403 for ever: in force once settled, said to be unverified, and probed again later', async () => {
    let refuse = true;
    fake.interceptor = (req) =>
      refuse && req.method === 'POST' && req.path.includes('/events')
        ? { status: 403, message: 'forbidden' }
        : undefined;
    const r = replica({ settleMs: 100, retryRefusedMs: 300 } as Partial<
      ConstructorParameters<typeof ScopeController>[0]
    >);
    r.land(kindRule('team-a', 'deployments', 'Deployment'), randomUUID());
    await eventually(() => expect(registration().rules.flatMap((x) => x.resources)).toEqual(['deployments']));
    const { outcome } = await r.admit(kindRule('prod', 'configmaps', 'ConfigMap'));
    expect(['widened', 'covered']).toContain(outcome.kind);
    expect((outcome as { unverified?: string }).unverified).toMatch(/probes are refused: .*forbidden/);
    // Allowed again: after the retry time the next version is proven by a probe, not by its settle time.
    refuse = false;
    await new Promise((res) => setTimeout(res, 350));
    const next = await r.admit(kindRule('staging', 'secrets', 'Secret'));
    expect(next.outcome.kind).toBe('widened');
    expect((next.outcome as { unverified?: string }).unverified).toBeUndefined();
    expect(loadedSends('Secret', 'staging')).toBe(true);
  });
});
