import { JsonObject } from '../../util/json';
import { nameOf } from '../../util/meta';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { messageOf } from '../../util/errors';

/*
 * An existing cluster is left as the suite found it: the cluster-scoped objects a suite may create (namespaces, CRDs,
 * webhook configurations, admission policies, RBAC, Nodes) are listed before it runs, and whatever is new afterwards
 * is deleted, webhook configurations first (a Fail-policy webhook pointing at a stopped process blocks writes),
 * namespaces and CRDs last, waiting until they are gone so that the next suite does not meet them Terminating.
 */

const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
/** In deletion order. */
const COLLECTIONS = [
  `${ADMISSION}/validatingwebhookconfigurations`,
  `${ADMISSION}/mutatingwebhookconfigurations`,
  `${ADMISSION}/validatingadmissionpolicybindings`,
  `${ADMISSION}/validatingadmissionpolicies`,
  `${ADMISSION}/mutatingadmissionpolicybindings`,
  `${ADMISSION}/mutatingadmissionpolicies`,
  '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  '/api/v1/nodes',
  '/api/v1/namespaces',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
];
/** Deleted objects of these are waited for. */
const AWAITED = new Set(['/api/v1/namespaces', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions']);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function names(admin: KubeClient, collection: string): Promise<Map<string, JsonObject> | null> {
  try {
    const list = await admin.request('GET', collection);
    return new Map(((list.items ?? []) as JsonObject[]).map((o) => [nameOf(o), o]));
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return null; // not served here
    throw err;
  }
}

const terminating = (o: JsonObject) => !!(o.metadata as JsonObject | undefined)?.deletionTimestamp;

/** The cluster-scoped objects that existed when a suite started. */
export class ClusterSnapshot {
  private constructor(
    private readonly admin: KubeClient,
    private readonly before: Map<string, Set<string>>,
  ) {}

  /** Lists them, after waiting (bounded) for what an earlier suite left Terminating to go. */
  static async take(admin: KubeClient, timeoutMs = 180_000): Promise<ClusterSnapshot> {
    const deadline = Date.now() + timeoutMs;
    for (const collection of AWAITED)
      for (;;) {
        const objects = await names(admin, collection);
        const going = objects ? [...objects.values()].filter(terminating).map(nameOf) : [];
        if (going.length === 0) break;
        if (Date.now() > deadline)
          throw new Error(`e2e: still Terminating after ${timeoutMs} ms: ${going.join(', ')}`);
        await sleep(500);
      }
    const before = new Map<string, Set<string>>();
    for (const collection of COLLECTIONS) {
      const objects = await names(admin, collection);
      if (objects) before.set(collection, new Set(objects.keys()));
    }
    return new ClusterSnapshot(admin, before);
  }

  /** Deletes what is new since the snapshot and waits for namespaces and CRDs to be gone; returns what it could not. */
  async restore(timeoutMs = 180_000): Promise<string[]> {
    const problems: string[] = [];
    const awaited: Array<{ collection: string; name: string }> = [];
    for (const collection of COLLECTIONS) {
      const old = this.before.get(collection);
      const now = old ? await names(this.admin, collection) : null;
      if (!old || !now) continue;
      for (const [name, obj] of now) {
        if (old.has(name)) continue;
        if (AWAITED.has(collection)) awaited.push({ collection, name });
        if (terminating(obj)) continue;
        try {
          await this.admin.request('DELETE', `${collection}/${encodeURIComponent(name)}`, {
            query: { propagationPolicy: 'Background' },
          });
        } catch (err) {
          if (!(err instanceof KubeApiError && err.status === 404))
            problems.push(`delete ${collection}/${name}: ${messageOf(err)}`);
        }
      }
    }
    const deadline = Date.now() + timeoutMs;
    for (const { collection, name } of awaited)
      for (;;) {
        try {
          await this.admin.request('GET', `${collection}/${encodeURIComponent(name)}`);
        } catch (err) {
          if (err instanceof KubeApiError && err.status === 404) break;
        }
        if (Date.now() > deadline) {
          problems.push(`${collection}/${name} still there after ${timeoutMs} ms (no namespace controller?)`);
          break;
        }
        await sleep(250);
      }
    return problems;
  }
}
