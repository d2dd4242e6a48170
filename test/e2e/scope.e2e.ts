import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { createLogger, silentLogger } from '../../util/logger';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { RunningOperator, startOperator } from '../../operator/start';
import { ScopeMode, readLive } from '../../scope/ownership';
import { dragnetOf, readScope, withScope } from '../../scope/entry';
import { computeScope } from '../../scope/compute';
import { ResourceCatalog } from '../../scope/catalog';
import { sendsRequest } from '../../scope/sends';
import { kindRule } from '../../scope/testing';
import { apply, ClusterLedger, remove, replaceFresh, waitFor, webhookManifests } from './cluster';
import { freePort } from './controlplane';
import { describeCluster, E2eCluster, startCluster } from './target';
import { serviceAccountClient } from './credentials';
import { installBundle } from './install';
import { kubectl } from './kubectl';
import { percentile, scrape, webhookCalls, writeConfigMaps } from './metrics';
import { blackHole, probeWebhook } from './probes';

/*
 * The dragnet scope on a real API server (target.ts: its own control plane, or an existing cluster): the API server
 * calls the dragnet only when a rule could act. Webhook calls are counted from kube-apiserver's own metrics
 * (apiserver_admission_webhook_request_total{name=...}, read with the admin's credentials).
 */

const run = randomBytes(3).toString('hex');
const SCOPE_LABEL = `modrule-e2e-${run}`;
const SHOP = `shop-${run}`;
const TENANT = `tenant-${run}`;
const OPERATOR_SA = 'kubemod-operator';
const CLUSTER_NS = 'kubemod-system';
const DRAGNET = 'dragnet.kubemod.io';
const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
const WEBHOOKS = '/apis/admissionregistration.k8s.io/v1';
const MUTATING = `${WEBHOOKS}/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration`;
const VALIDATING = `${WEBHOOKS}/validatingwebhookconfigurations/kubemod-validating-webhook-configuration`;
/** Short, so a write the API server sends to an unanswering webhook shows the wait without stalling the suite. */
const DRAGNET_TIMEOUT_SECONDS = 3;
const measured: Record<string, string> = {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The API server applies a changed configuration from its own watch: counting starts this much later. */
const APPLIED_MS = 1000;

function modRule(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}

/** A Patch rule labelling objects of one kind with `label=yes`. */
function labelRule(namespace: string, name: string, kind: string, label = 'scoped'): JsonObject {
  return modRule(namespace, name, {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: kind }],
    patch: [{ op: 'add', path: `/metadata/labels/${label}`, value: '"yes"' }],
  });
}

const labelsOf = (obj: JsonObject) => ((obj.metadata as JsonObject).labels ?? {}) as JsonObject;

function deployment(name: string): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: 'registry.example.com/web:1.0.0' }] },
      },
    },
  };
}

describeCluster('the dragnet scope on a real API server', () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let operatorClient: KubeClient;
  let saDir = '';
  let webhookPort = 0;
  let url = '';
  const operators: RunningOperator[] = [];
  let manifests: { mutating: JsonObject; validating: JsonObject };

  function start(mode: ScopeMode = 'rules', port = webhookPort): Promise<RunningOperator> {
    return startOperator(
      {
        clusterNamespace: CLUSTER_NS,
        podNamespace: CLUSTER_NS,
        webhookPort: port,
        healthPort: 0,
        host: cp.listenHost,
        certMode: 'self',
        certDir: '',
        extraHosts: [cp.webhookHost],
        dragnetScope: mode,
      },
      { client: operatorClient, logger: process.env.E2E_LOG ? createLogger('debug') : silentLogger() },
    ).then((op) => {
      operators.push(op);
      return op;
    });
  }

  async function stop(op: RunningOperator): Promise<void> {
    operators.splice(operators.indexOf(op), 1);
    await op.stop();
  }

  /** The live dragnet registration and whether the operator's stamp says it wrote it. */
  async function live(): Promise<{
    resources: string[];
    ours: boolean;
    caBundles: boolean;
    config: JsonObject;
  }> {
    const config = await admin.request('GET', MUTATING);
    const dragnet = dragnetOf(config)!.webhook;
    const hooks = (config.webhooks ?? []) as JsonObject[];
    return {
      resources: readScope(dragnet)
        .rules.flatMap((r) => r.resources)
        .sort(),
      ours: readLive(config, dragnet).ours,
      caBundles: hooks.every((h) => (h.clientConfig as JsonObject).caBundle),
      config,
    };
  }

  async function readyGeneration(namespace: string, name: string): Promise<boolean> {
    const rule = await admin.request('GET', `${MODRULES(namespace)}/${name}`);
    const status = (rule.status ?? {}) as JsonObject;
    const ready = ((status.conditions ?? []) as JsonObject[]).find((c) => c.type === 'Ready');
    return ready?.status === 'True' && ready.observedGeneration === (rule.metadata as JsonObject).generation;
  }

  const calls = async () => webhookCalls(await scrape(cp), DRAGNET);

  beforeAll(async () => {
    const started = Date.now();
    cp = await startCluster();
    const kc = cp.kubeConfig();
    admin = createKubeClient(kubeConfigAccess(kc));
    webhookPort = await freePort();
    url = `https://${cp.webhookHost}:${webhookPort}`;
    // The bundle as a user applies it; the webhook configurations call this process by URL.
    await installBundle(admin, new ClusterLedger(admin));
    for (const ns of [SHOP, TENANT])
      await admin.request('POST', '/api/v1/namespaces', {
        body: {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: ns, labels: { [SCOPE_LABEL]: 'true' } },
        },
      });
    manifests = webhookManifests(url, SCOPE_LABEL);
    const hooks = manifests.mutating.webhooks as JsonObject[];
    hooks.find((h) => h.name === DRAGNET)!.timeoutSeconds = DRAGNET_TIMEOUT_SECONDS;
    await admin.request('POST', `${WEBHOOKS}/mutatingwebhookconfigurations`, { body: manifests.mutating });
    await admin.request('POST', `${WEBHOOKS}/validatingwebhookconfigurations`, {
      body: manifests.validating,
    });
    const sa = await serviceAccountClient(admin, kc, CLUSTER_NS, OPERATOR_SA);
    saDir = sa.dir;
    operatorClient = sa.client;
    const op = await start();
    await waitFor('the operator to be ready', async () => op.isReady());
    await waitFor('ModRules to be admitted', async () => {
      await apply(admin, MODRULES(SHOP), labelRule(SHOP, 'deployments', 'Deployment'));
      return true;
    });
    await waitFor('the Deployment rule to be Ready', () => readyGeneration(SHOP, 'deployments'), 30_000, 50);
    // Ready at once (in force through the installed net); the narrowing follows the store's computation.
    await waitFor(
      'the registration narrowed to the Deployment rule',
      async () => {
        const l = await live();
        return l.ours && l.resources.join() === 'deployments';
      },
      30_000,
      50,
    );
    await sleep(APPLIED_MS); // the API server picks it up from its watch
    measured['set-up (control plane, bundle, operator, first rule Ready)'] = `${Date.now() - started} ms`;
  });

  afterAll(async () => {
    for (const op of [...operators]) await stop(op);
    if (saDir) rmSync(saDir, { recursive: true, force: true });
    await cp?.stop();
    process.stderr.write(
      `e2e scope measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  test('500 ConfigMap writes where the rules only target Deployments reach the webhook 0 times', async () => {
    expect(await live()).toMatchObject({ resources: ['deployments'], ours: true, caBundles: true });
    const before = await calls();
    const latencies = await writeConfigMaps(admin, SHOP, 500, 16);
    expect((await calls()) - before).toBe(0);
    measured['500 ConfigMaps, scoped net: webhook calls / p50 / p99'] =
      `0 / ${percentile(latencies, 50)} ms / ${percentile(latencies, 99)} ms`;
    // The counter counts: a Deployment is sent, and patched.
    const d = await admin.request('POST', `/apis/apps/v1/namespaces/${SHOP}/deployments`, {
      body: deployment('web'),
    });
    expect(labelsOf(d).scoped).toBe('yes');
    expect((await calls()) - before).toBe(1);
    // Our conditions never fail to evaluate (an error would skip the webhook: failurePolicy Ignore).
    expect(
      webhookCalls(await scrape(cp), DRAGNET, 'apiserver_admission_match_condition_evaluation_errors_total'),
    ).toBe(0);
  });

  test('the same 500 writes with --dragnet-scope wide reach it 500 times; back to the rules afterwards', async () => {
    await stop(operators[0]);
    const wide = await start('wide');
    await waitFor(
      'the configured net',
      async () => (await live()).resources.includes('configmaps'),
      10_000,
      50,
    );
    await sleep(APPLIED_MS);
    const before = await calls();
    const latencies = await writeConfigMaps(admin, SHOP, 500, 16);
    expect((await calls()) - before).toBe(500);
    measured['500 ConfigMaps, wide net: webhook calls / p50 / p99'] =
      `500 / ${percentile(latencies, 50)} ms / ${percentile(latencies, 99)} ms`;
    await stop(wide);
    await start('rules');
    await waitFor(
      'the scope again',
      async () => (await live()).resources.join() === 'deployments',
      10_000,
      50,
    );
  });

  test('a ConfigMap rule: the first ConfigMap after Ready is patched; deleted, the scope narrows again', async () => {
    const added = Date.now();
    await apply(admin, MODRULES(SHOP), labelRule(SHOP, 'configmaps', 'ConfigMap', 'colored'));
    await waitFor('Ready on the ConfigMap rule', () => readyGeneration(SHOP, 'configmaps'), 15_000, 10);
    const ready = Date.now() - added;
    const cm = await admin.request('POST', `/api/v1/namespaces/${SHOP}/configmaps`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `first-after-ready` } },
    });
    expect(labelsOf(cm).colored).toBe('yes');
    await remove(admin, `${MODRULES(SHOP)}/configmaps`);
    const deleted = Date.now();
    await waitFor(
      'the scope without ConfigMaps',
      async () => !(await live()).resources.includes('configmaps'),
      10_000,
      20,
    );
    measured['ConfigMap rule: applied to Ready / deleted to narrowed'] =
      `${ready} ms / ${Date.now() - deleted} ms`;
    await sleep(APPLIED_MS);
    const before = await calls();
    await writeConfigMaps(admin, SHOP, 50, 8);
    expect((await calls()) - before).toBe(0);
  });

  test('the configuration re-applied from the bundle: scope and caBundle back within 10 s', async () => {
    // As GitOps re-creates it: deleted and created from the manifest (no caBundle, the wide net).
    await remove(admin, MUTATING);
    await remove(admin, VALIDATING);
    const wiped = Date.now();
    await admin.request('POST', `${WEBHOOKS}/mutatingwebhookconfigurations`, { body: manifests.mutating });
    await admin.request('POST', `${WEBHOOKS}/validatingwebhookconfigurations`, {
      body: manifests.validating,
    });
    await waitFor(
      'scope and caBundle back',
      async () => {
        const l = await live();
        const validating = (await admin.request('GET', VALIDATING)).webhooks as JsonObject[];
        const ca = validating.every((h) => (h.clientConfig as JsonObject).caBundle);
        return l.ours && l.caBundles && ca && l.resources.join() === 'deployments';
      },
      10_000,
      20,
    );
    const recreated = Date.now() - wiped;
    expect(recreated).toBeLessThan(10_000);
    // As `kubectl apply -f bundle.yaml` does it: the wide rules are patched back in, caBundle stays.
    let applied = -1;
    if (cp.kubectl) {
      const file = join(mkdtempSync(join(tmpdir(), 'modrule-e2e-scope-')), 'mutating.json');
      writeFileSync(file, JSON.stringify(manifests.mutating));
      const at = Date.now();
      const out = await kubectl(cp.kubectl, cp.kubeConfigPath, ['apply', '-f', file], '');
      expect(out.code).toBe(0);
      await waitFor(
        'the scope after kubectl apply',
        async () => {
          const l = await live();
          return l.ours && l.caBundles && l.resources.join() === 'deployments';
        },
        10_000,
        20,
      );
      applied = Date.now() - at;
      expect(applied).toBeLessThan(10_000);
    }
    measured['configuration re-created / kubectl-applied: scope and caBundle back'] =
      `${recreated} ms / ${applied} ms`;
  });

  test('a kind the API server does not serve fails wide until its CRD appears, then narrows', async () => {
    await apply(admin, MODRULES(TENANT), labelRule(TENANT, 'widgets', 'Widget'));
    await waitFor('Ready on the Widget rule', () => readyGeneration(TENANT, 'widgets'), 15_000, 20);
    // Unknown kind: every resource of the net in that namespace (ConfigMaps included) is sent.
    let before = await calls();
    await writeConfigMaps(admin, TENANT, 5, 1);
    expect((await calls()) - before).toBe(5);
    // KubeMod's list has no widgets: the user adds them to the net, as by editing the bundle and applying it.
    const net = readScope(dragnetOf(manifests.mutating)!.webhook);
    net.rules[0].resources.push('widgets');
    // The operator may write the configuration meanwhile (a 409): then from a fresh read.
    await replaceFresh(admin, MUTATING, (current) => {
      const hooks = [...(current.webhooks as JsonObject[])];
      const at = hooks.findIndex((h) => h.name === DRAGNET);
      hooks[at] = withScope(hooks[at], net);
      return { ...current, webhooks: hooks };
    });
    // The edit is the configured net now; the unknown kind still gets all of it (widgets included) in TENANT.
    await waitFor('the scope within the edited net', async () => (await live()).ours, 10_000, 20);
    expect((await live()).resources).toEqual(expect.arrayContaining(['configmaps', 'secrets', 'widgets']));
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.e2e-${run}.example.com` },
      spec: {
        group: `e2e-${run}.example.com`,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    };
    await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd });
    const created = Date.now();
    await waitFor(
      'the scope to narrow to widgets',
      async () => (await live()).resources.join() === 'deployments,widgets',
      20_000,
      50,
    );
    measured['CRD created -> kind-pinned rule narrowed to it'] = `${Date.now() - created} ms`;
    await sleep(APPLIED_MS);
    before = await calls();
    await writeConfigMaps(admin, TENANT, 5, 1);
    expect((await calls()) - before).toBe(0);
    // A Widget is sent (and patched) now.
    const widget = await waitFor('a Widget to be created and patched', async () => {
      const w = await admin.request('POST', `/apis/${crd.spec.group}/v1/namespaces/${TENANT}/widgets`, {
        body: { apiVersion: `${crd.spec.group}/v1`, kind: 'Widget', metadata: { generateName: 'w-' } },
      });
      return labelsOf(w).scoped === 'yes' ? w : undefined;
    });
    expect(labelsOf(widget).scoped).toBe('yes');
  });

  test('10,000 namespaces with rules: the API server takes the registration and sends what it predicts', async () => {
    // The scope for rules in 10,000 namespaces plus a cluster-wide rule (which keeps the names out of the selector,
    // so the conditions carry them: sharded by name ranges), registered for a probe webhook that counts calls.
    const names = Array.from({ length: 10_000 }, (_, i) => `t-${run}-${String(i).padStart(5, '0')}`);
    const rules = [
      kindRule(CLUSTER_NS, 'nodes', 'Node'),
      ...names.map((ns, i) => kindRule(ns, 'r', i % 3 ? 'Secret' : 'ConfigMap')),
    ];
    const configured = readScope(dragnetOf(manifests.mutating)!.webhook);
    const computed = Date.now();
    const result = computeScope({
      rules,
      clusterNamespace: CLUSTER_NS,
      configured,
      catalog: ResourceCatalog.builtin(),
    });
    const took = Date.now() - computed;
    expect(result.coarsened).toEqual([]);
    expect(result.registration.matchConditions.length).toBeGreaterThan(1);
    const probe = await probeWebhook(cp.webhookHost);
    try {
      const config = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: `modrule-e2e-probe-${run}` },
        webhooks: [
          withScope(
            {
              name: 'probe.kubemod.io',
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Fail',
              timeoutSeconds: 5,
              clientConfig: { url: probe.url, caBundle: Buffer.from(probe.ca).toString('base64') },
            },
            result.registration,
          ),
        ],
      };
      const size = JSON.stringify(config).length;
      await admin.request('POST', `${WEBHOOKS}/mutatingwebhookconfigurations`, { body: config });
      const sample = [names[0], names[1], names[4999], names[5001], names[9999]];
      for (const ns of [...sample, `t-${run}-other`])
        await admin.request('POST', '/api/v1/namespaces', {
          body: {
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name: ns, labels: { [SCOPE_LABEL]: 'true' } },
          },
        });
      await sleep(1500); // the API server picks the configuration up from its watch
      let predicted = 0;
      for (const ns of [...sample, `t-${run}-other`])
        for (const [kind, resource] of [
          ['ConfigMap', 'configmaps'],
          ['Secret', 'secrets'],
        ]) {
          const labels = { 'kubernetes.io/metadata.name': ns, [SCOPE_LABEL]: 'true' };
          const req = {
            operation: 'CREATE' as const,
            group: '',
            version: 'v1',
            resource,
            namespace: ns,
            clusterScoped: false,
            namespaceLabels: labels,
          };
          if (sendsRequest(result.registration, result.clauses, req)) predicted++;
          // By name: a controller-manager creates kube-root-ca.crt in every new namespace too.
          probe.expect(`${ns}/${resource}/probe`, sendsRequest(result.registration, result.clauses, req));
          await admin.request('POST', `/api/v1/namespaces/${ns}/${resource}`, {
            query: { dryRun: 'All' },
            body: { apiVersion: 'v1', kind, metadata: { name: 'probe' } },
          });
        }
      expect(probe.mismatches()).toEqual([]);
      expect(predicted).toBe(5);
      measured['10,000 namespaces: compute / conditions / configuration size / API server agrees'] =
        `${took} ms / ${result.registration.matchConditions.length} / ${Math.round(size / 1024)} KiB / ${probe.calls()} calls as predicted`;
      await remove(admin, `${WEBHOOKS}/mutatingwebhookconfigurations/modrule-e2e-probe-${run}`);
    } finally {
      await probe.close();
    }
  });

  test('two replicas computing at once converge on one registration and stop writing', async () => {
    const second = await start('rules', await freePort());
    await waitFor('the second replica to be ready', async () => second.isReady());
    const versions = new Set<string>();
    const watch = setInterval(() => {
      void admin
        .request('GET', MUTATING)
        .then((c) => versions.add(String((c.metadata as JsonObject).resourceVersion)));
    }, 25);
    try {
      await apply(admin, MODRULES(TENANT), labelRule(TENANT, 'secrets', 'Secret'));
      await waitFor(
        'both replicas agree',
        async () => (await live()).resources.includes('secrets'),
        10_000,
        20,
      );
      await sleep(3000);
      const settled = String(((await live()).config.metadata as JsonObject).resourceVersion);
      await sleep(2000);
      expect(String(((await live()).config.metadata as JsonObject).resourceVersion)).toBe(settled);
      measured['two replicas, one rule added: configuration versions seen'] = String(versions.size);
      // One version before, then one or two writes (the second replica may restamp at the same rules): no loop.
      expect(versions.size).toBeLessThanOrEqual(4);
    } finally {
      clearInterval(watch);
      await stop(second);
    }
  });

  test('the operator stopped (its port a black hole): writes outside the scope keep their latency', async () => {
    const baseline = await writeConfigMaps(admin, SHOP, 100, 1);
    for (const op of [...operators]) await stop(op);
    const hole = await blackHole(webhookPort, cp.listenHost);
    try {
      const before = await calls();
      const outside = await writeConfigMaps(admin, SHOP, 100, 1);
      expect((await calls()) - before).toBe(0);
      // Inside the scope the API server waits for the webhook's timeout, then admits (failurePolicy Ignore).
      const t = Date.now();
      await admin.request('POST', `/apis/apps/v1/namespaces/${SHOP}/deployments`, {
        body: deployment('hung'),
      });
      const inside = Date.now() - t;
      measured['operator down: ConfigMap p50/p99 before / after; a Deployment (in scope)'] =
        `${percentile(baseline, 50)}/${percentile(baseline, 99)} ms / ${percentile(outside, 50)}/${percentile(outside, 99)} ms; ${inside} ms`;
      expect(inside).toBeGreaterThanOrEqual(DRAGNET_TIMEOUT_SECONDS * 1000 - 500);
      expect(percentile(outside, 99)).toBeLessThan(Math.max(4 * percentile(baseline, 99), 250));
    } finally {
      await hole.close();
    }
  });
});
