import { JsonObject, JsonValue, cloneJson, isJsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { analyzeModRule } from '../../rule/compile';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { RuleStore } from '../../store/rules';
import { stableStringify } from '../../engine/stable-stringify';
import { createKubeClient, KubeApiError, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { probeInForce } from '../../operator/native/api';
import { withProbe } from '../../native/probe';
import { issueServingCert, newCa } from '../../webhook/certs';
import { RunningWebhook, startWebhookServer } from '../../webhook/server';
import { MemoryTlsSource } from '../../webhook/tls';
import {
  compileNative,
  DragnetMatch,
  dragnetMatchOf,
  NativeCompilation,
  policyCollection,
  policyPath,
  residualRule,
} from '../../native';

import { FUZZ_API_VERSION, FUZZ_KIND } from '../../native/testing/generate';
import { bundleObjects, replaceFresh, waitFor } from './cluster';
import { freePort } from './controlplane';
import { scrape, webhookCalls } from './metrics';
import { ApiServerCounts, NATIVE_DRAGNET, ReachRecord, ReachTracker } from './native-reach';
import { E2eCluster, startCluster } from './target';
import { HARNESS_MANAGER, othersEntries, withoutOthersFields } from './native-writers';

/*
 * The differential harness: one control plane, the dragnet webhook served in-process from a RuleStore, and native
 * policies compiled from the same ModRules. A case puts one rule on both sides, each side in its own namespaces
 * (labelled web or native, and with the case number), sends the same objects to both, and compares what the API
 * server stored (or the rejection) field by field.
 */

export const SIDE = 'modrule-diff/side';
export const CASE = 'modrule-diff/case';
const CLUSTER_NAMESPACE = 'kubemod-system';

/** web: the dragnet webhook; native: the policies; none: neither (what the API server stores without the rule). */
export type Side = 'web' | 'native' | 'none';

/** What the API server answered for one request. */
export type Outcome = { stored: JsonObject } | { rejected: string };

/** One object through both sides, create then update. */
export interface Comparison {
  readonly object: string;
  readonly web: Outcome[];
  readonly native: Outcome[];
}

/** The rule and objects of one case. `namespaceLabels` go on the "labelled" namespaces. */
export interface DiffCase {
  readonly id: number;
  readonly rule: JsonObject;
  readonly objects: readonly JsonObject[];
}

export interface CaseResult {
  readonly compiled: NativeCompilation;
  readonly comparisons: readonly Comparison[];
  /** Objects the rule changed or rejected on the webhook side (0: the case exercised nothing). */
  readonly affected: number;
  /** ms until the native policy answered the probe. */
  readonly propagationMs: number;
  /** The native side's writes: did each reach the webhook, as predicted, exactly where a guard leaves it there. */
  readonly reach: readonly ReachRecord[];
  readonly apiServer: ApiServerCounts;
}

/** Labels of the "labelled" namespace pair: what add-flavor and the selector examples look for. */
export const LABELLED = { color: 'blue', flavor: 'mint', compliance: 'pci' };

export class DifferentialHarness {
  private readonly created: string[] = [];
  private readonly reach: ReachTracker;
  private constructor(
    readonly cp: E2eCluster,
    readonly client: KubeClient,
    private readonly webhooks: Record<'web' | 'native', { store: RuleStore; server: RunningWebhook }>,
    private readonly bundleScope: DragnetMatch,
    nativeHook: JsonObject,
  ) {
    this.reach = new ReachTracker({
      client,
      registry: webhooks.native.server.registry,
      installed: nativeHook,
      configuration: 'modrule-diff-native',
      clusterNamespace: CLUSTER_NAMESPACE,
      crds: [fuzzCrd()],
      namespaceLabels: (ns) => ({
        'kubernetes.io/metadata.name': ns,
        ...(ns.startsWith('prod-') ? LABELLED : {}),
        [SIDE]: ns.includes('-n') ? 'native' : ns.includes('-w') ? 'web' : 'none',
        [CASE]: ns.split('-')[1],
      }),
    });
  }

  /** The store the web side's webhook serves. */
  get store(): RuleStore {
    return this.webhooks.web.store;
  }

  /** On the cluster under test (target.ts). */
  static async start(): Promise<DifferentialHarness> {
    const cp = await startCluster();
    const servers: RunningWebhook[] = [];
    try {
      const client = createKubeClient(kubeConfigAccess(cp.kubeConfig()));
      const now = new Date();
      const ca = newCa(now, 2, 'modrule-diff-ca');
      const serving = issueServingCert(ca, [cp.webhookHost], now, 1);
      const mutating = bundleObjects().find((o) => o.kind === 'MutatingWebhookConfiguration');
      const scope = dragnetMatchOf(mutating ?? {});
      if (!mutating || !scope) throw new Error('bundle.yaml has no dragnet webhook');
      const hooks = {} as Record<'web' | 'native', { store: RuleStore; server: RunningWebhook }>;
      let nativeHook: JsonObject = {};
      for (const side of ['web', 'native'] as const) {
        const store = new RuleStore({ clusterNamespace: CLUSTER_NAMESPACE, keepSource: false });
        const server = await startServer(serving, store, cp.listenHost);
        servers.push(server);
        hooks[side] = { store, server };
        const hook = cloneJson(
          (mutating.webhooks as JsonObject[]).find((w) => w.name === 'dragnet.kubemod.io')!,
        );
        hook.clientConfig = {
          url: `https://${cp.webhookHost}:${server.port}/dragnet-webhook`,
          caBundle: Buffer.from(ca.cert).toString('base64'),
        };
        hook.failurePolicy = 'Fail';
        hook.namespaceSelector = withLabel(scope.namespaceSelector, SIDE, side);
        hook.objectSelector = { matchLabels: { [SIDE]: side } };
        if (side === 'native') {
          hook.name = NATIVE_DRAGNET;
          nativeHook = cloneJson(hook);
        }
        await client.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
          body: {
            apiVersion: 'admissionregistration.k8s.io/v1',
            kind: 'MutatingWebhookConfiguration',
            metadata: { name: `modrule-diff-${side}` },
            webhooks: [hook],
          },
        });
      }
      return new DifferentialHarness(cp, client, hooks, scope, nativeHook);
    } catch (err) {
      for (const s of servers) await s.close();
      await cp.stop();
      throw err;
    }
  }

  async stop(): Promise<void> {
    await this.webhooks.web.server.close();
    await this.webhooks.native.server.close();
    await this.cp.stop();
  }

  /** The dragnet scope a case's native policies get: the bundle's, narrowed to the case's native objects. */
  nativeScope(id: number): DragnetMatch {
    return {
      rules: this.bundleScope.rules,
      namespaceSelector: withLabel(
        withLabel(this.bundleScope.namespaceSelector, SIDE, 'native'),
        CASE,
        String(id),
      ),
      objectSelector: { matchLabels: { [SIDE]: 'native', [CASE]: String(id) } },
    };
  }

  /** Namespaces of a case: [labelled, plain] per side. Names start with prod- (the selector example's regex). */
  namespaces(id: number, side: Side): [string, string] {
    const s = sideLetter(side);
    return [`prod-${id}-${s}-a`, `plain-${id}-${s}`];
  }

  /** Runs one case; the rule must fit (the caller checks compiled.fits for the others). */
  async run(c: DiffCase): Promise<CaseResult> {
    for (const side of ['web', 'native', 'none'] as const) await this.createNamespaces(c.id, side);
    const webRules = this.placeRule(c, 'web');
    const nativeRules = this.placeRule(c, 'native');
    const compiledAll = nativeRules.map((r) =>
      compileNative(analyzeModRule(r).rule!, {
        clusterNamespace: CLUSTER_NAMESPACE,
        dragnet: this.nativeScope(c.id),
      }),
    );
    const compiled = compiledAll[0];
    if (compiledAll.some((x) => !x.fits))
      return {
        compiled,
        comparisons: [],
        affected: 0,
        propagationMs: 0,
        reach: [],
        apiServer: { calls: 0, conditionErrors: 0, answered: 0, otherWriters: false },
      };
    // Each policy also answers the operator's probe (an Event): the probe shows it in force, where an object's
    // outcome can come from the residual webhook rule while the policy is not loaded yet (seen under load).
    const written: JsonObject[] = [];
    for (const x of compiledAll) {
      if (!x.fits) continue;
      const policy = withProbe(x.policy);
      written.push(policy);
      await this.client.request('POST', policyCollection(String(policy.kind)), { body: policy });
      await this.client.request('POST', policyCollection(String(x.binding.kind)), { body: x.binding });
    }
    await this.untilInForce(c.id, written);
    this.webhooks.web.store.replaceRules(webRules);
    // The native side's webhook serves what the policies leave out, as the operator's store does.
    const residuals = compiledAll.flatMap((x) => {
      if (!x.fits) return [];
      const rule = this.webhooks.native.store.compileRule(nativeRules[compiledAll.indexOf(x)]).rule!;
      const r = residualRule(rule, x.guards);
      return r ? [r] : [];
    });
    this.webhooks.native.store.replaceRules([], residuals);
    // The registration the operator would write for them: the native side's webhook is called where it says.
    await this.reach.install(c.id, this.webhooks.native.store.allRules(), this.namespaces(c.id, 'native')[1]);
    const inputs = c.objects.flatMap((o) => [o, withLastApplied(o)]);
    // The webhook side and the control side count nothing per write: their writes go SENDERS at a time; the native
    // side's stay one by one (native-reach tells which write reached the webhook by counting its calls).
    const web = await mapInOrder(inputs, SENDERS, (o) => this.send(c.id, 'web', o));
    const controls = await mapInOrder(inputs, SENDERS, (o) => this.send(c.id, 'none', o));
    // Per target namespace (or the one cluster-scoped target) and step (create, update): an object the rule changes
    // or rejects there, to see the policy of that namespace in force before the native side runs.
    let affected = 0;
    const probes = new Map<string, Probe>();
    // An object the API server refuses with no rule at all (a chart's unrendered name) proves nothing: a webhook
    // refuses it before the API server validates it, a validating policy after, in different words.
    const invalid = new Set<number>();
    for (let i = 0; i < inputs.length; i++) {
      const control = controls[i];
      if (control.flat().every((o) => 'rejected' in o && !o.rejected.startsWith('operation rejected'))) {
        invalid.add(i);
        continue;
      }
      let changed = false;
      control.forEach((target, t) =>
        target.forEach((outcome, step) => {
          const want = web[i][t][step];
          if (!want || sameOutcome(outcome, 'none', want, 'web', c.id)) return;
          changed = true;
          const key = `${isClusterScoped(inputs[i])}/${t}/${step}`;
          if (!probes.has(key)) probes.set(key, { input: inputs[i], want, target: t, step });
        }),
      );
      if (changed) affected++;
    }
    const started = Date.now();
    for (const p of probes.values()) {
      await waitFor(
        'the native policy to take effect',
        async () => sameOutcome(await this.probe(c.id, p), 'native', p.want, 'web', c.id),
        // Generous: a loaded API server was seen taking over 15 s to put a new policy in force. A probe that
        // never matches (an outcome the policy cannot give) then shows as the case's mismatch below.
        60_000,
        100,
      ).catch(() => undefined);
    }
    const propagationMs = Date.now() - started;
    const comparisons: Comparison[] = [];
    const before = await scrape(this.cp);
    const answeredBefore = await this.reach.calls();
    this.reach.records.length = 0;
    for (let i = 0; i < inputs.length; i++) {
      if (invalid.has(i)) continue;
      const native = await this.send(c.id, 'native', inputs[i]);
      comparisons.push({ object: describeObject(inputs[i]), web: web[i].flat(), native: native.flat() });
    }
    const after = await scrape(this.cp);
    const delta = (metric: string) =>
      webhookCalls(after, NATIVE_DRAGNET, metric) - webhookCalls(before, NATIVE_DRAGNET, metric);
    const apiServer = {
      calls: delta('apiserver_admission_webhook_request_total'),
      conditionErrors: delta('apiserver_admission_match_condition_evaluation_errors_total'),
      answered: (await this.reach.calls()) - answeredBefore,
      otherWriters: !this.cp.own,
    };
    const reach = [...this.reach.records];
    for (const x of compiledAll) {
      if (!x.fits) continue;
      await this.client.request('DELETE', policyPath(x.binding)).catch(() => undefined);
      await this.client.request('DELETE', policyPath(x.policy)).catch(() => undefined);
    }
    this.webhooks.web.store.replaceRules([]);
    this.webhooks.native.store.replaceRules([]);
    // Services hold addresses from a small range: everything the case made goes.
    for (const path of this.created.splice(0))
      await this.client.request('DELETE', path).catch(() => undefined);
    return { compiled, comparisons, affected, propagationMs, reach, apiServer };
  }

  /** Waits until every policy answers a probe in one of the case's native namespaces (if it sees any of them). */
  private async untilInForce(id: number, policies: JsonObject[]): Promise<void> {
    const namespaces = this.namespaces(id, 'native');
    for (const policy of policies) {
      await waitFor(
        `policy ${String((policy.metadata as JsonObject).name)} in force`,
        async () => {
          for (const ns of namespaces) {
            // The case's objectSelector asks for these labels.
            const labels = { [SIDE]: 'native', [CASE]: String(id) };
            if (await probeInForce(this.client, policy, ns, labels)) return true;
          }
          return false;
        },
        30_000,
        50,
      ).catch(() => undefined); // a policy that sees neither namespace: the object probes below decide
    }
  }

  private async createNamespaces(id: number, side: Side): Promise<void> {
    const [labelled, plain] = this.namespaces(id, side);
    for (const [name, extra] of [
      [labelled, LABELLED],
      [plain, {}],
    ] as const) {
      const ns = await this.client.request('POST', '/api/v1/namespaces', {
        body: {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name, labels: { ...extra, [SIDE]: side, [CASE]: String(id) } },
        },
      });
      this.webhooks.web.store.upsertNamespace(ns);
      this.webhooks.native.store.upsertNamespace(ns);
      // Pods need their namespace's default ServiceAccount (a controller-manager, when one runs, may be first).
      await this.client
        .request('POST', `/api/v1/namespaces/${name}/serviceaccounts`, {
          body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } },
        })
        .catch((err: unknown) => {
          if (!(err instanceof KubeApiError && err.status === 409)) throw err;
        });
    }
  }

  /** The rule as each side holds it: a namespaced rule is copied into each of the side's namespaces. */
  private placeRule(c: DiffCase, side: Side): JsonObject[] {
    const meta = c.rule.metadata as JsonObject;
    if (meta.namespace === CLUSTER_NAMESPACE) return [cloneJson(c.rule)];
    return this.namespaces(c.id, side).map((ns) => ({
      ...cloneJson(c.rule),
      metadata: { ...cloneJson(meta), namespace: ns },
    }));
  }

  /** What the native side does now with a probe's object, without keeping it (dry run, or created and deleted). */
  private async probe(id: number, p: Probe): Promise<Outcome> {
    if (p.step === 0) return (await this.send(id, 'native', p.input, true))[p.target][0];
    const targets = isClusterScoped(p.input) ? [undefined] : this.namespaces(id, 'native');
    const obj = instantiate(p.input, id, 'native', targets[p.target], !this.cp.own);
    let created: JsonObject;
    try {
      created = await this.client.request('POST', collectionOf(obj), { body: obj, query: WRITE });
    } catch (err) {
      return { rejected: rejection(err) };
    }
    try {
      return { stored: await this.update(created, true) };
    } catch (err) {
      return { rejected: rejection(err) };
    } finally {
      await this.client.request('DELETE', pathOf(created)).catch(() => undefined);
      if (created.kind === 'Namespace') await this.finalizeNamespace(created);
      // pvc-protection holds a deleted claim until a controller (none here) releases it: release it by hand.
      if (created.kind === 'PersistentVolumeClaim')
        await this.client
          .request('PATCH', pathOf(created), {
            body: { metadata: { finalizers: null } },
            contentType: 'application/merge-patch+json',
          })
          .catch(() => undefined);
    }
  }

  /**
   * A deleted Namespace stays Terminating until its finalizer runs (no namespace controller here): the real write of
   * the same name after a probe would meet "object is being deleted". Empty and finalized by hand, it goes at once.
   */
  private async finalizeNamespace(ns: JsonObject): Promise<void> {
    const path = `${pathOf(ns)}/finalize`;
    const now = await this.client.request('GET', pathOf(ns)).catch(() => null);
    if (!now) return;
    await this.client
      .request('PUT', path, { body: { ...now, spec: { ...(now.spec as JsonObject), finalizers: [] } } })
      .catch(() => undefined);
    await waitFor(`namespace ${String((ns.metadata as JsonObject).name)} to go`, () =>
      this.client.request('GET', pathOf(ns)).then(
        () => false,
        (e: unknown) => e instanceof KubeApiError && e.status === 404,
      ),
    );
  }

  /**
   * Creates the object on one side, in each of its namespaces (or once, cluster-scoped), then updates it (not in a
   * dry run): per target, the create's outcome and the update's.
   */
  private async send(id: number, side: Side, input: JsonObject, dryRun = false): Promise<Outcome[][]> {
    const all: Outcome[][] = [];
    const targets = isClusterScoped(input) ? [undefined] : this.namespaces(id, side);
    for (const ns of targets) {
      const out: Outcome[] = [];
      all.push(out);
      const obj = instantiate(input, id, side, ns, !this.cp.own);
      let created: JsonObject;
      const tracked = <T>(op: 'CREATE' | 'UPDATE', o: JsonObject, write: () => Promise<T>) =>
        side === 'native' && !dryRun ? this.reach.track(op, o, write) : write();
      try {
        created = await tracked('CREATE', obj, () =>
          this.client.request('POST', collectionOf(obj), {
            body: obj,
            query: dryRun ? { ...WRITE, dryRun: 'All' } : WRITE,
          }),
        );
        out.push({ stored: created });
        if (!dryRun) this.created.push(pathOf(created));
      } catch (err) {
        out.push({ rejected: rejection(err) });
        continue;
      }
      if (dryRun) continue;
      try {
        out.push({ stored: await tracked('UPDATE', touched(created), () => this.update(created)) });
      } catch (err) {
        out.push({ rejected: rejection(err) });
      }
    }
    return all;
  }

  /**
   * The update the harness sends: the stored object with one more annotation. Another writer (a cluster's
   * controllers, its scheduler) may have written since: then from a fresh read, as kubectl does.
   */
  private update(created: JsonObject, dryRun = false): Promise<JsonObject> {
    return replaceFresh(this.client, pathOf(created), touched, {
      first: created,
      query: dryRun ? { ...WRITE, dryRun: 'All' } : WRITE,
    });
  }
}

/** The harness's writes, under its own field manager: what other writers set is told apart by theirs. */
const WRITE = { fieldManager: HARNESS_MANAGER };

const COLLECTIONS: Record<string, string> = {
  Namespace: '/api/v1/namespaces',
  Node: '/api/v1/nodes',
  Pod: '/api/v1/namespaces/{ns}/pods',
  Service: '/api/v1/namespaces/{ns}/services',
  ConfigMap: '/api/v1/namespaces/{ns}/configmaps',
  ServiceAccount: '/api/v1/namespaces/{ns}/serviceaccounts',
  PersistentVolumeClaim: '/api/v1/namespaces/{ns}/persistentvolumeclaims',
  Deployment: '/apis/apps/v1/namespaces/{ns}/deployments',
  StatefulSet: '/apis/apps/v1/namespaces/{ns}/statefulsets',
  DaemonSet: '/apis/apps/v1/namespaces/{ns}/daemonsets',
  ReplicaSet: '/apis/apps/v1/namespaces/{ns}/replicasets',
  ReplicationController: '/api/v1/namespaces/{ns}/replicationcontrollers',
  Job: '/apis/batch/v1/namespaces/{ns}/jobs',
  CronJob: '/apis/batch/v1/namespaces/{ns}/cronjobs',
  [FUZZ_KIND]: `/apis/${FUZZ_API_VERSION}/namespaces/{ns}/configmaps`,
};

/**
 * The generator's kind: a custom resource whose spec keeps any JSON, so CEL meets numbers, nulls, lists and maps
 * where rules read strings. Its plural is `configmaps`, a resource the dragnet webhook (apiGroups *) matches.
 */
export function fuzzCrd(): JsonObject {
  const [group, version] = FUZZ_API_VERSION.split('/');
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `configmaps.${group}` },
    spec: {
      group,
      names: { kind: FUZZ_KIND, listKind: `${FUZZ_KIND}List`, plural: 'configmaps', singular: 'fuzzmap' },
      scope: 'Namespaced',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          },
        },
      ],
    },
  };
}

/** The collection a corpus object is created in. */
export function collectionOf(obj: JsonObject): string {
  const template = COLLECTIONS[String(obj.kind)];
  if (!template) throw new Error(`no collection known for ${String(obj.kind)}`);
  return template.replace('{ns}', String((obj.metadata as JsonObject).namespace ?? ''));
}

function pathOf(obj: JsonObject): string {
  return `${collectionOf(obj)}/${String((obj.metadata as JsonObject).name)}`;
}

function startServer(
  serving: { cert: string; key: string },
  store: RuleStore,
  host: string,
): Promise<RunningWebhook> {
  return freePort().then((port) =>
    startWebhookServer(
      {
        tls: new MemoryTlsSource(serving),
        port,
        host,
        healthPort: 0,
        healthHost: '127.0.0.1',
        logger: silentLogger(),
        isReady: () => true,
      },
      { store },
    ),
  );
}

/** An object the rule changes or rejects on the webhook side, at one target and step (0 create, 1 update). */
interface Probe {
  readonly input: JsonObject;
  readonly want: Outcome;
  readonly target: number;
  readonly step: number;
}

/** The update the harness sends: the stored object with one more annotation. */
function touched(created: JsonObject): JsonObject {
  const meta = created.metadata as JsonObject;
  return {
    ...created,
    metadata: {
      ...meta,
      annotations: { ...((meta.annotations as JsonObject) ?? {}), 'modrule-diff/updated': 'yes' },
    },
  };
}

function withLabel(selector: JsonObject, key: string, value: string): JsonObject {
  const labels = isJsonObject(selector.matchLabels) ? selector.matchLabels : {};
  return { ...selector, matchLabels: { ...labels, [key]: value } };
}

function rejection(err: unknown): string {
  if (!(err instanceof KubeApiError)) throw err;
  const m = /operation rejected by the following ModRule\(s\): .*$/s.exec(err.message);
  // Anything else (an invalid patched object, say): the write is refused, in words that differ by path.
  return m ? m[0] : `refused by the API server (${err.status >= 500 ? 'server error' : 'client error'})`;
}

const SERVER_FIELDS = [
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'managedFields',
  'generation',
  'selfLink',
];

const CLUSTER_KINDS = new Set(['Namespace', 'Node', 'ClusterRole', 'ClusterRoleBinding', 'PersistentVolume']);

function isClusterScoped(o: JsonObject): boolean {
  return CLUSTER_KINDS.has(String(o.kind));
}

/** The object as one side sends it: in the side's namespace (or renamed, cluster-scoped), with the side's labels. */
function instantiate(
  input: JsonObject,
  id: number,
  side: Side,
  namespace: string | undefined,
  collected = false,
): JsonObject {
  const obj = cloneJson(input);
  const meta = (obj.metadata ?? {}) as JsonObject;
  for (const f of SERVER_FIELDS) delete meta[f];
  // `collected`: a garbage collector runs (an existing cluster), and deletes an object whose owner does not exist (a
  // corpus Pod's ReplicaSet) between its create and its update, on one side and not the other.
  if (collected) delete meta.ownerReferences;
  if (namespace) meta.namespace = namespace;
  else meta.name = `${String(meta.name)}-${id}-${sideLetter(side)}`;
  meta.labels = { ...((meta.labels as JsonObject) ?? {}), [SIDE]: side, [CASE]: String(id) };
  obj.metadata = meta;
  delete obj.status;
  if (obj.kind === 'Service' && isJsonObject(obj.spec)) {
    // Addresses are allocated per cluster.
    delete obj.spec.clusterIP;
    delete obj.spec.clusterIPs;
    if (Array.isArray(obj.spec.ports)) for (const p of obj.spec.ports) if (isJsonObject(p)) delete p.nodePort;
  }
  if (obj.kind === 'Pod' && isJsonObject(obj.spec)) {
    // No token controller here; and the generated token volume's name is random.
    obj.spec.automountServiceAccountToken = false;
    delete obj.spec.nodeName;
  }
  return obj;
}

/** kubectl apply's annotation: the object as the user wrote it, compact JSON with sorted keys. */
export function withLastApplied(o: JsonObject): JsonObject {
  const obj = cloneJson(o);
  const meta = (obj.metadata ?? {}) as JsonObject;
  meta.name = `${String(meta.name)}-la`;
  for (const f of SERVER_FIELDS) delete meta[f];
  delete obj.status;
  const applied = cloneJson(obj);
  delete (applied.metadata as JsonObject).annotations;
  meta.annotations = {
    ...((meta.annotations as JsonObject) ?? {}),
    [LAST_APPLIED_ANNOTATION]: `${stableStringify(applied)}\n`,
  };
  obj.metadata = meta;
  return obj;
}

function describeObject(o: JsonObject): string {
  const meta = o.metadata as JsonObject;
  const last = isJsonObject(meta.annotations) && LAST_APPLIED_ANNOTATION in meta.annotations;
  return `${String(o.kind)} ${String(meta.name)}${last ? ' (with last-applied-configuration)' : ''}`;
}

/**
 * The stored object without what differs between any two creates (and between the sides' names), nor the fields
 * `others` (managedFields entries of other writers, of both sides compared) own.
 */
export function normalize(o: Outcome, id: number, side: Side, others?: JsonObject[]): JsonValue {
  if ('rejected' in o) return { rejected: renameSide(o.rejected, id, side) };
  // The object's uid, and what the API server derives from it (a Job's controller-uid selector and labels).
  const uid = String((o.stored.metadata as JsonObject).uid ?? '');
  const stored = uid
    ? (JSON.parse(JSON.stringify(o.stored).split(uid).join('<uid>')) as JsonObject)
    : o.stored;
  const obj = withoutOthersFields(cloneJson(stored), others);
  const meta = obj.metadata as JsonObject;
  for (const f of ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'generation'])
    delete meta[f];
  if (isJsonObject(meta.labels)) {
    delete meta.labels[SIDE];
    if (isJsonObject(meta.labels) && Object.keys(meta.labels).length === 0) delete meta.labels;
  }
  if (isJsonObject(obj.spec)) {
    delete obj.spec.clusterIP;
    delete obj.spec.clusterIPs;
    if (Array.isArray(obj.spec.ports)) for (const p of obj.spec.ports) if (isJsonObject(p)) delete p.nodePort;
  }
  return JSON.parse(renameSide(JSON.stringify(obj), id, side)) as JsonValue;
}

function renameSide(text: string, id: number, side: Side): string {
  const s = sideLetter(side);
  return text
    .split(`prod-${id}-${s}-a`)
    .join('<labelled>')
    .split(`plain-${id}-${s}`)
    .join('<plain>')
    .split(`-${id}-${s}`)
    .join('-<case>');
}

function sideLetter(side: Side): string {
  return side === 'web' ? 'w' : side === 'native' ? 'n' : 'x';
}

const othersOf = (outcomes: Outcome[]) =>
  outcomes.flatMap((o) => ('stored' in o ? othersEntries(o.stored) : []));

/** Whether two sides' outcomes are the same once normalized. */
export function sameOutcome(a: Outcome, sideA: Side, b: Outcome, sideB: Side, id: number): boolean {
  const others = othersOf([a, b]);
  return JSON.stringify(normalize(a, id, sideA, others)) === JSON.stringify(normalize(b, id, sideB, others));
}

/** How one object's outcomes (create, update per target) differ between the sides: "path: web | native" lines. */
export function mismatchOf(c: Comparison, id: number): string[] {
  const web: JsonValue[] = [];
  const native: JsonValue[] = [];
  for (let i = 0; i < Math.max(c.web.length, c.native.length); i++) {
    const others = othersOf([c.web[i], c.native[i]].filter((o) => o !== undefined));
    if (c.web[i]) web.push(normalize(c.web[i], id, 'web', others));
    if (c.native[i]) native.push(normalize(c.native[i], id, 'native', others));
  }
  return JSON.stringify(web) === JSON.stringify(native) ? [] : jsonDiff(web, native);
}

/** Where two JSON values differ: "path: a | b" lines (values cut to 160 characters). */
export function jsonDiff(a: JsonValue, b: JsonValue, path = '', out: string[] = []): string[] {
  if (out.length >= 12) return out;
  if (JSON.stringify(a) === JSON.stringify(b)) return out;
  if (isJsonObject(a) && isJsonObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
      jsonDiff(a[k] ?? null, b[k] ?? null, `${path}/${k}`, out);
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((x, i) => jsonDiff(x, b[i], `${path}/${i}`, out));
    return out;
  }
  const cut = (v: JsonValue) => JSON.stringify(v)?.slice(0, 160);
  out.push(`${path || '/'}: ${cut(a)} | ${cut(b)}`);
  return out;
}

/** Writes a case sends at a time on the sides that count nothing per write (web, none). */
const SENDERS = 6;

/** fn over items, `width` at a time; the results in the items' order. */
async function mapInOrder<T, R>(
  items: readonly T[],
  width: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}
