import { isJsonObject, JsonObject } from '../../util/json';
import { RuleSnapshot } from '../../store/rules';
import { InstalledNet, installedNetOf, UNRESTRICTED } from '../../audit/dragnet';
import { planScan, ScanPlan } from '../../audit/plan';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { discoverResources } from './discovery';
import { RateLimiter } from './rate';
import { ScanProblem } from './scan';
import { MUTATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATION_PATH } from '../../kube/owned';
import { messageOf } from '../../util/errors';
import { metadataOf } from '../../util/meta';

/** Every item of a collection, page by page; items get apiVersion and kind (list items have none). */
export async function listAll(
  client: KubeClient,
  path: string,
  type: { apiVersion: string; kind: string },
  options: { pageSize?: number; limiter?: RateLimiter; signal?: AbortSignal; labelSelector?: string } = {},
): Promise<JsonObject[]> {
  const out: JsonObject[] = [];
  let token: string | undefined;
  do {
    await options.limiter?.take(options.signal);
    const page = await client.request('GET', path, {
      query: { limit: options.pageSize ?? 500, continue: token, labelSelector: options.labelSelector },
    });
    const meta = metadataOf(page);
    token = typeof meta.continue === 'string' && meta.continue ? meta.continue : undefined;
    for (const item of Array.isArray(page.items) ? page.items : [])
      if (isJsonObject(item)) out.push({ ...type, ...item });
  } while (token && !options.signal?.aborted);
  return out;
}

/**
 * The dragnet webhook's scope from its live configuration. Without one (not installed, or not readable) every
 * resource and namespace counts, and a note says so.
 */
export async function readInstalledNet(
  client: KubeClient,
  limiter?: RateLimiter,
): Promise<{ scope: InstalledNet; note?: string }> {
  await limiter?.take();
  let configuration: JsonObject;
  try {
    configuration = await client.request('GET', MUTATING_WEBHOOK_CONFIGURATION_PATH);
  } catch (err) {
    const status = err instanceof KubeApiError ? err.status : 0;
    const why = status === 404 ? 'does not exist' : `cannot be read (${messageOf(err)})`;
    return {
      scope: UNRESTRICTED,
      note:
        `the MutatingWebhookConfiguration ${MUTATING_WEBHOOK_CONFIGURATION} ${why}: auditing every resource and namespace ` +
        'the rules reach, as if the dragnet webhook received them all',
    };
  }
  const scope = installedNetOf(configuration);
  if (scope) return { scope };
  return {
    scope: UNRESTRICTED,
    note: `${MUTATING_WEBHOOK_CONFIGURATION} has no dragnet.kubemod.io webhook: auditing every resource the rules reach`,
  };
}

/** What an audit is about to list, and what the user should know before it starts. */
export interface PreparedScan {
  plan: ScanPlan;
  scope: InstalledNet;
  notes: string[];
  /** Discovery failures (an aggregated API that is down): what they serve is not audited. */
  problems: ScanProblem[];
}

/**
 * Discovery, the dragnet's scope and the namespace list, turned into a plan. `namespaceNames` saves the list when
 * the caller has the names already.
 */
export async function prepareScan(
  client: KubeClient,
  snapshot: RuleSnapshot,
  options: {
    namespace?: string;
    namespaceNames?: readonly string[];
    limiter?: RateLimiter;
    signal?: AbortSignal;
  },
): Promise<PreparedScan> {
  const discovery = await discoverResources(client);
  const { scope, note } = await readInstalledNet(client, options.limiter);
  const names =
    options.namespaceNames ??
    (options.namespace !== undefined
      ? [options.namespace]
      : (await listAll(client, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace' }, options)).map(
          (ns) => String(metadataOf(ns).name),
        ));
  const plan = planScan(snapshot, discovery.resources, names, scope, { namespace: options.namespace });
  return {
    plan,
    scope,
    notes: note ? [note, ...plan.notes] : plan.notes,
    problems: discovery.failedGroups.map((g) => ({
      what: g.groupVersion,
      status: 503,
      message: `discovery of ${g.groupVersion} failed, its resources are not audited: ${g.error}`,
    })),
  };
}
