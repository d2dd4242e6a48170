import type { Registry } from 'prom-client';
import { cloneJson, JsonObject } from '../../util/json';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { CompiledRule } from '../../rule/compile';
import { declineOf } from '../../native';
import { ResourceCatalog } from '../../scope/catalog';
import { computeScope, ScopeResult } from '../../scope/compute';
import { readScope, withScope } from '../../scope/entry';
import { sendsRequest } from '../../scope/sends';
import { ScopeOperation, ScopeRequest } from '../../scope/types';
import { ruleReach } from '../../scope/reach';
import { waitFor } from './cluster';
import { metadataOf } from '../../util/meta';

/*
 * Which requests reach the dragnet webhook when rules are served natively: the registration the operator would
 * write for the webhook's rules (the residual ones), the prediction for one request, and what "a guard leaves it
 * there" means for it. The differential harness writes the registration to the native side's webhook, counts the
 * calls its webhook gets per request, and compares.
 */

/** The native side's webhook: its own name, so the API server's metrics tell its calls from the web side's. */
export const NATIVE_DRAGNET = 'native.dragnet.kubemod.io';

/** The registration for the webhook's rules, within the net the side's webhook was installed with. */
export function caseScope(
  installed: JsonObject,
  rules: readonly CompiledRule[],
  clusterNamespace: string,
  crds: JsonObject[],
): { webhook: JsonObject; result: ScopeResult } {
  const configured = readScope(installed);
  const result = computeScope({
    rules,
    clusterNamespace,
    configured,
    catalog: ResourceCatalog.builtin(crds),
  });
  return { webhook: withScope(cloneJson(installed), result.registration), result };
}

/** One write as the API server matches it against a registration. */
export function requestOf(
  operation: ScopeOperation,
  object: JsonObject,
  catalog: ResourceCatalog,
  namespaceLabels: (ns: string) => Record<string, string>,
): ScopeRequest {
  const [served] = catalog.resourcesOf(String(object.kind));
  if (!served) throw new Error(`no resource serves ${String(object.kind)}`);
  const meta = metadataOf(object);
  const isNamespace = served.group === '' && served.resource === 'namespaces';
  const namespace = isNamespace ? String(meta.name) : served.namespaced ? String(meta.namespace ?? '') : '';
  const version = String(object.apiVersion).split('/').pop()!;
  return {
    operation,
    group: served.group,
    version,
    resource: served.resource,
    // A Namespace's request carries its own name as namespace.
    namespace,
    clusterScoped: !served.namespaced,
    namespaceLabels: isNamespace
      ? { 'kubernetes.io/metadata.name': namespace, ...((meta.labels as Record<string, string>) ?? {}) }
      : namespace
        ? namespaceLabels(namespace)
        : {},
    object,
  };
}

/** What the registration predicts for a request. */
export function predicted(result: ScopeResult, request: ScopeRequest): boolean {
  return sendsRequest(result.registration, result.clauses, request);
}

/**
 * Whether the webhook is needed for a request by the rules it holds: a rule served in full that reaches it, or a
 * residual one whose guards decline the object (or whose guards the registration cannot check).
 */
export function guardLeavesIt(
  rules: readonly CompiledRule[],
  result: ScopeResult,
  request: ScopeRequest,
  clusterNamespace: string,
): boolean {
  return rules.some((rule) => {
    const reach = ruleReach(rule, clusterNamespace);
    if (!reach.operations.has(request.operation)) return false;
    const object = request.object as JsonObject;
    if (reach.kinds && !reach.kinds.has(String(object.kind))) return false;
    if (reach.groups && !reach.groups.has(request.group)) return false;
    const ns = request.clusterScoped ? null : request.namespace; // Namespaces count as cluster-scoped
    const inReach =
      ns === null
        ? reach.cluster
        : reach.namespaces.any ||
          reach.namespaces.names.has(ns) ||
          reach.namespaces.patterns.some((p) => p.every((r) => r.test(ns)));
    if (!inReach) return false;
    const outcome = declineOf(rule);
    if (!outcome || 'why' in outcome || result.native.get(rule.key) !== null) return true;
    return request.operation === 'DELETE' || outcome.decline.declines(request.object);
  });
}

/** One native-side write: did it reach the webhook, was it predicted to, and does a guard leave it there. */
export interface ReachRecord {
  readonly object: string;
  readonly operation: ScopeOperation;
  readonly reached: boolean;
  readonly predicted: boolean;
  readonly needed: boolean;
}

const CONFIGURATIONS = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
/** The label of the objects the activation probe webhook sees: the case id. */
const PROBE_LABEL = 'modrule-diff/probe';

/**
 * The native side's registration per case, and the count of its webhook's calls per write. A case's registration
 * is in force once a probe webhook written in the same configuration answers (the API server loads a configuration
 * as a whole): a dry-run ConfigMap labelled for the case reaches the webhook.
 */
export class ReachTracker {
  private result: ScopeResult | null = null;
  private rules: readonly CompiledRule[] = [];
  readonly records: ReachRecord[] = [];

  constructor(
    private readonly deps: {
      client: KubeClient;
      registry: Registry;
      installed: JsonObject;
      configuration: string;
      clusterNamespace: string;
      crds: JsonObject[];
      namespaceLabels: (ns: string) => Record<string, string>;
    },
  ) {}

  /** Writes the registration for the webhook's rules of case `id`; resolves once the API server uses it. */
  async install(id: number, rules: readonly CompiledRule[], probeNamespace: string): Promise<ScopeResult> {
    const { client, installed, configuration, clusterNamespace, crds } = this.deps;
    const { webhook, result } = caseScope(installed, rules, clusterNamespace, crds);
    const probe: JsonObject = {
      ...cloneJson(installed),
      name: 'probe.modrule-diff.io',
      rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], operations: ['CREATE'] }],
      namespaceSelector: {},
      objectSelector: { matchLabels: { [PROBE_LABEL]: String(id) } },
    };
    delete probe.matchConditions;
    const path = `${CONFIGURATIONS}/${configuration}`;
    const live = await client.request('GET', path);
    await client.request('PUT', path, { body: { ...live, webhooks: [webhook, probe] } });
    await waitFor(`the case ${id} registration in force`, async () => {
      const before = await this.calls();
      await client.request('POST', `/api/v1/namespaces/${probeNamespace}/configmaps`, {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { generateName: 'reach-probe-', labels: { [PROBE_LABEL]: String(id) } },
        },
        query: { dryRun: 'All' },
      });
      return (await this.calls()) > before;
    });
    this.result = result;
    this.rules = rules;
    this.records.length = 0;
    return result;
  }

  /** Makes one native-side write and records whether it reached the webhook. */
  async track<T>(operation: ScopeOperation, object: JsonObject, write: () => Promise<T>): Promise<T> {
    const before = await this.calls();
    // 400: the API server could not even decode the object; it never got to admission.
    let decoded = true;
    try {
      return await write();
    } catch (err) {
      decoded = !(err instanceof KubeApiError && err.status === 400);
      throw err;
    } finally {
      const reached = (await this.calls()) > before;
      if (this.result && decoded) {
        const catalog = ResourceCatalog.builtin(this.deps.crds);
        const request = requestOf(operation, object, catalog, this.deps.namespaceLabels);
        const meta = object.metadata as JsonObject;
        this.records.push({
          object: `${operation} ${String(object.kind)} ${String(meta.namespace ?? '')}/${String(meta.name)}`,
          operation,
          reached,
          predicted: predicted(this.result, request),
          needed: guardLeavesIt(this.rules, this.result, request, this.deps.clusterNamespace),
        });
      }
    }
  }

  /** Dragnet requests the side's webhook answered so far. */
  async calls(): Promise<number> {
    const metric = this.deps.registry.getSingleMetric('modrule_webhook_requests_total');
    if (!metric) return 0;
    const { values } = await metric.get();
    return values.filter((v) => v.labels.endpoint === 'dragnet').reduce((s, v) => s + v.value, 0);
  }
}

/** The native side's webhook during a case's native-side writes, as the API server and the webhook counted it. */
export interface ApiServerCounts {
  /** Calls the API server counted, and match conditions it could not evaluate. */
  readonly calls: number;
  readonly conditionErrors: number;
  /** Calls the webhook answered. */
  readonly answered: number;
  /** Others write the case's objects too (an existing cluster's controllers): their writes reach the webhook too. */
  readonly otherWriters: boolean;
}

/**
 * What is wrong with a case's native-side writes: one that reached the webhook other than predicted, a prediction
 * other than "a guard leaves it there", a match condition the API server could not evaluate, calls the API server
 * counted other than the webhook's own count, or (with no other writers) calls other than the case's writes made.
 */
export function reachProblems(records: readonly ReachRecord[], apiServer: ApiServerCounts): string[] {
  const out: string[] = [];
  for (const r of records) {
    if (r.reached !== r.predicted) out.push(`${r.object}: reached ${r.reached}, predicted ${r.predicted}`);
    if (r.predicted !== r.needed)
      out.push(`${r.object}: predicted ${r.predicted}, a guard leaves it ${r.needed}`);
  }
  if (apiServer.conditionErrors !== 0)
    out.push(`the API server could not evaluate the match conditions ${apiServer.conditionErrors} times`);
  const reached = records.filter((r) => r.reached).length;
  if (apiServer.calls !== apiServer.answered)
    out.push(`the API server counted ${apiServer.calls} calls, the webhook answered ${apiServer.answered}`);
  if (!apiServer.otherWriters && apiServer.answered !== reached)
    out.push(`the webhook answered ${apiServer.answered} calls, the case's writes made ${reached}`);
  return out;
}
