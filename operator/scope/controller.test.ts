import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { ResourceCatalog } from '../../scope/catalog';
import { defaultConfigured } from '../../scope/defaults';
import { CONFIGURED_ANNOTATION, readLive, SCOPE_ANNOTATION } from '../../scope/ownership';
import { dragnetOf, readScope, withScope } from '../../scope/entry';
import { RuleStore } from '../../store/rules';
import { ScopeController } from './controller';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { ReadyGate } from './ready-gate';
import { StatusSink } from '../status/reporter';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { labelRule, modRule } from '../testing/objects';

const NAME = 'kubemod-mutating-webhook-configuration';

/** The bundle's configuration as a fresh install has it (with a caBundle the certificate code put there). */
function bundleConfiguration(): JsonObject {
  const dragnet = withScope(
    {
      name: 'dragnet.kubemod.io',
      clientConfig: { url: 'https://127.0.0.1:9443/dragnet-webhook', caBundle: 'Q0E=' },
      failurePolicy: 'Ignore',
    },
    defaultConfigured(),
  );
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: NAME },
    webhooks: [{ name: 'mmodrule.kubemod.io', rules: [] }, dragnet],
  };
}

/** A rule source like ClusterSync: a store and the ModRule resourceVersion it has reached. */
class Rules {
  readonly store = new RuleStore({ clusterNamespace: 'kubemod-system', keepSource: false });
  version = '1';
  upsert(rule: JsonObject, version: string): JsonObject {
    const stored = { ...rule, metadata: { ...(rule.metadata as JsonObject), resourceVersion: version } };
    this.version = version;
    expect(this.store.upsertRule(stored)).toEqual([]);
    return stored;
  }
  remove(namespace: string, name: string, version: string): void {
    this.version = version;
    this.store.deleteRule(namespace, name);
  }
}

const catalog = { catalog: () => ResourceCatalog.builtin(), onChange: () => () => undefined };

describe('ScopeController against the fake API server', () => {
  let fake: FakeApiServer;
  const running: ScopeController[] = [];

  function scope(
    rules: Rules,
    options: Partial<ConstructorParameters<typeof ScopeController>[0]> = {},
  ): ScopeController {
    const s = new ScopeController({
      client: createKubeClient(fake.access()),
      logger: silentLogger(),
      mode: 'rules',
      clusterNamespace: 'kubemod-system',
      rules: () => rules.store.allRules(),
      rulesVersion: () => rules.version,
      rulesReady: () => true,
      onRulesChange: (l) => rules.store.onChange(l),
      discovery: catalog,
      debounceMs: 10,
      settleMs: 50,
      ...options,
    });
    running.push(s);
    s.start();
    return s;
  }

  const live = () => fake.get('mutatingwebhookconfigurations', null, NAME)!;
  const registration = () => readScope(dragnetOf(live())!.webhook);
  const resources = () => registration().rules.flatMap((r) => r.resources);

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    fake.put('mutatingwebhookconfigurations', bundleConfiguration());
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.stop()));
    await fake.close();
  });

  test('narrows the installed net to the rules, keeps caBundle and the other webhooks, stamps what it wrote', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    scope(rules);
    await eventually(() => expect(resources()).toEqual(['deployments']));
    const config = live();
    const dragnet = dragnetOf(config)!.webhook;
    expect((dragnet.clientConfig as JsonObject).caBundle).toBe('Q0E=');
    expect(dragnet.failurePolicy).toBe('Ignore');
    expect((config.webhooks as JsonObject[])[0]).toEqual({ name: 'mmodrule.kubemod.io', rules: [] });
    const annotations = (config.metadata as JsonObject).annotations as Record<string, string>;
    expect(JSON.parse(annotations[SCOPE_ANNOTATION])).toMatchObject({ rulesVersion: '5', mode: 'rules' });
    expect(JSON.parse(annotations[CONFIGURED_ANNOTATION]).rules[0].resources).toContain('configmaps');
    // What it wrote reads back as its own.
    expect(readLive(config, dragnet).ours).toBe(true);
  });

  test('reports a new rule Ready only once the registration sends its objects (and settled)', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    const s = scope(rules, { settleMs: 300 });
    await eventually(() => expect(resources()).toEqual(['deployments']));
    const reported: string[] = [];
    const sink: StatusSink = {
      report: (r) => void reported.push(String((r.metadata as JsonObject).name)),
      forget: () => undefined,
    };
    const gate = new ReadyGate(sink, s);
    await eventually(() => expect(s.covers('5')).toBe(true));
    const configMaps = rules.upsert(
      modRule('team-a', 'configmaps', {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
      }),
      '6',
    );
    gate.report(configMaps, []);
    expect(reported).toEqual([]);
    await eventually(() => expect(resources()).toContain('configmaps'));
    const written = Date.now();
    await eventually(() => expect(reported).toEqual(['configmaps']), 3000);
    // Not before the settle time after the write.
    expect(Date.now() - written).toBeGreaterThanOrEqual(200);
    // Invalid rules are reported at once: they are not Ready either way.
    gate.report(modRule('team-a', 'bad', {}), [{ field: 'spec', message: 'required' }]);
    expect(reported).toEqual(['configmaps', 'bad']);
    gate.stop();
  });

  test('narrows again after a rule is deleted, from the store', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    rules.upsert(
      modRule('team-b', 'pods', { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Pod' }] }),
      '6',
    );
    scope(rules);
    await eventually(() => expect(resources().sort()).toEqual(['deployments', 'pods']));
    rules.remove('team-b', 'pods', '7');
    await eventually(() => expect(resources()).toEqual(['deployments']));
  });

  test('heals the registration when someone re-applies the bundle, adopting their net as the configured one', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    scope(rules);
    await eventually(() => expect(resources()).toEqual(['deployments']));
    // A GitOps tool puts the bundle's registration back (annotations stay, as with kubectl apply).
    const current = live();
    const reapplied = bundleConfiguration();
    const webhooks = reapplied.webhooks as JsonObject[];
    webhooks[1] = withScope(webhooks[1], {
      ...defaultConfigured(),
      rules: [{ ...defaultConfigured().rules[0], resources: ['deployments', 'statefulsets', 'pods'] }],
    });
    fake.put('mutatingwebhookconfigurations', { ...reapplied, metadata: current.metadata });
    await eventually(() => expect(resources()).toEqual(['deployments']));
    const l = readLive(live(), dragnetOf(live())!.webhook);
    expect(l.ours).toBe(true);
    expect(l.configured.rules[0].resources).toEqual(['deployments', 'statefulsets', 'pods']);
  });

  test('wide mode puts the configured net back', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    const narrow = scope(rules);
    await eventually(() => expect(resources()).toEqual(['deployments']));
    await narrow.stop();
    scope(rules, { mode: 'wide' });
    await eventually(() => expect(resources()).toContain('configmaps'));
    expect(registration()).toEqual(defaultConfigured());
  });

  test('cannot write: the registration stays as it is, the new rule is not reported, it retries', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    let refuse = true;
    fake.interceptor = (req) =>
      refuse && req.method === 'PUT' && req.path.includes('mutatingwebhookconfigurations')
        ? { status: 403, message: 'forbidden' }
        : undefined;
    const s = scope(rules);
    await eventually(() =>
      expect(fake.requestsTo('PUT', /mutatingwebhookconfigurations/).length).toBeGreaterThan(0),
    );
    // The installed (wide) net stays, and it covers every rule once in force (no probe entry here: settled).
    expect(registration()).toEqual(defaultConfigured());
    await eventually(() => expect(s.covers('5')).toBe(true));
    refuse = false;
    await eventually(() => expect(resources()).toEqual(['deployments']), 5000);
  });

  test('the API server refuses a condition: the next write is coarser, never narrower', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    rules.upsert(
      modRule('kubemod-system', 'teams', {
        type: 'Patch',
        targetNamespaceRegex: '^team-',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
      }),
      '6',
    );
    // As an API server whose CEL does not take a regex: refuse any expression with matches().
    fake.interceptor = (req) => {
      if (req.method !== 'PUT' || !req.path.includes('mutatingwebhookconfigurations')) return undefined;
      return JSON.stringify(req.body).includes('.matches(')
        ? { status: 422, message: 'compilation failed' }
        : undefined;
    };
    scope(rules);
    await eventually(() => expect(resources().sort()).toEqual(['configmaps', 'deployments']));
    const text = JSON.stringify(registration().matchConditions);
    expect(text).not.toContain('matches(');
    // ConfigMaps of every namespace now (the regex is gone), Deployments still only in team-a.
    expect(text).toContain('team-a');
  });

  test('an API server that drops matchConditions (before 1.28): the scope falls back to webhook rules only', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    rules.upsert(
      modRule('team-b', 'pods', { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Pod' }] }),
      '6',
    );
    const client = createKubeClient(fake.access());
    // As an old API server stores it: the field it does not know is gone.
    const old: KubeClient = {
      request: (method, path, options) => {
        if (method !== 'PUT' || !path.includes('mutatingwebhookconfigurations'))
          return client.request(method, path, options);
        const body = JSON.parse(JSON.stringify(options?.body)) as JsonObject;
        for (const h of body.webhooks as JsonObject[]) delete h.matchConditions;
        return client.request(method, path, { ...options, body });
      },
      watch: (path, query, onEvent) => client.watch(path, query, onEvent),
    };
    scope(rules, { client: old });
    await eventually(() => expect(readLive(live(), dragnetOf(live())!.webhook).ours).toBe(true), 5000);
    expect(resources().sort()).toEqual(['deployments', 'pods']);
    expect(registration().matchConditions).toEqual([]);
    expect(registration().namespaceSelector).toEqual(defaultConfigured().namespaceSelector);
  });

  test('two replicas with stores at different points converge on the newer one, without flapping', async () => {
    const ahead = new Rules();
    const behind = new Rules();
    for (const r of [ahead, behind]) r.upsert(labelRule('team-a', 'deployments'), '5');
    const secrets = modRule('team-b', 'secrets', {
      type: 'Reject',
      match: [{ select: '$.kind', matchValue: 'Secret' }],
    });
    ahead.upsert(secrets, '6');
    // The replica started last wins ties: let it be the one behind, which must wait for its store instead.
    scope(ahead);
    await new Promise((r) => setTimeout(r, 5));
    scope(behind);
    await eventually(() => expect(resources().sort()).toEqual(['deployments', 'secrets']));
    const writes = () => fake.requestsTo('PUT', /mutatingwebhookconfigurations/).length;
    /** Waits until no write happened for 500 ms (bounded), and returns how many there were. */
    const quiet = async () => {
      for (let last = -1, i = 0; writes() !== last && i < 20; i++) {
        last = writes();
        await new Promise((r) => setTimeout(r, 500));
      }
      return writes();
    };
    // One write (the replica ahead), or two if the one behind took over the bundle's net first: never a loop.
    const settled = await quiet();
    expect(settled).toBeLessThanOrEqual(2);
    expect(resources().sort()).toEqual(['deployments', 'secrets']);
    // The lagging replica catches up: at most a restamp (it started later), the same registration.
    behind.upsert(secrets, '6');
    expect(await quiet()).toBeLessThanOrEqual(settled + 1);
    expect(resources().sort()).toEqual(['deployments', 'secrets']);
  });

  test('tells onScope the per-rule reports of each computation: kinds not served, narrowed or on the configured net', async () => {
    const rules = new Rules();
    rules.upsert(labelRule('team-a', 'deployments'), '5');
    const typo = modRule('team-a', 'typo', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Deploymnet' }],
      patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
    });
    rules.upsert(typo, '6');
    for (const mode of ['rules', 'wide'] as const) {
      const seen: Array<{ unserved: string[]; narrowed: boolean }> = [];
      scope(rules, {
        mode,
        onScope: (reports, narrowed) =>
          seen.push({
            unserved: reports.flatMap((r) => r.unserved.map((u) => `${r.rule}:${u.kind}~${u.suggestion}`)),
            narrowed,
          }),
      });
      await eventually(() => expect(seen.length).toBeGreaterThan(0));
      expect(seen[0]).toEqual({
        unserved: ['team-a/typo:Deploymnet~Deployment'],
        narrowed: mode === 'rules',
      });
      await Promise.all(running.splice(0).map((s) => s.stop()));
    }
  });
});
