import { JsonObject } from '../../util/json';
import { metaString, namespaceOf } from '../../util/meta';
import { controllerOf } from '../../engine/references';
import { groupKind, metadataOnly, ReferenceObjects, ReferencePartition } from '../../store/references';
import type { OwnerNeeds } from '../../store/reference-plan';
import { KubeApiError } from '../../kube/kube';
import { collectionUrl } from './resources';
import { ReferenceWatch, WatchDeps } from './watch';

/*
 * The owner caches behind syntheticRefs.owner: a watch per owner kind (per namespace when only namespaced rules read
 * owners, else one for all namespaces), started the first time a request needs an owner of that kind, of the kinds
 * the operator is told to read (--owner-kinds). When the rules read only metadata of owners, only metadata is kept.
 * An owner the cache has not seen yet (its controller made the object a moment after making it) is read once from
 * the API server; an owner that is not there is remembered as absent for a short while.
 */

/** The owner kinds read when none are configured: the workload controllers' (group/Kind, core: Kind). */
export const DEFAULT_OWNER_KINDS: readonly string[] = [
  'apps/ReplicaSet',
  'apps/Deployment',
  'apps/StatefulSet',
  'apps/DaemonSet',
  'batch/Job',
  'batch/CronJob',
  'ReplicationController',
];

const ABSENT_MS = 10_000;
/** How long before an owner kind that could not be looked up in discovery is looked up again. */
const RETRY_UNREADABLE_MS = 30_000;

/** What an owner cache keeps of each object. */
function shapeOf(fields: 'metadata' | 'all'): (obj: JsonObject) => JsonObject {
  return fields === 'metadata' ? metadataOnly : (o) => o;
}
const MAX_FETCHED = 1000;

/** Why an owner of an object could not be looked up (for the rules' status), or undefined. */
export type OwnerProblem = { readonly kind: string; readonly why: string };

export class OwnerCaches {
  private readonly watches = new Map<string, ReferenceWatch<'metadata' | 'all'>>();
  private readonly partitions = new Map<string, ReferencePartition>();
  private readonly allowed: ReadonlySet<string>;
  private needs: OwnerNeeds | null = null;
  // Owners read from the API server on a cache miss, and owners found missing, until the watch has them.
  private readonly fetched = new Map<
    string,
    { at: number; part: ReferencePartition; ns: string; name: string }
  >();
  private readonly absent = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<void>>();
  // Per owner kind (group/Kind): namespaced or not, from discovery; or why it cannot be read (asked again later).
  private readonly scopes = new Map<string, { namespaced?: boolean; unreadable?: string; at: number }>();

  constructor(
    private readonly objects: ReferenceObjects,
    private readonly deps: WatchDeps,
    kinds: readonly string[] = DEFAULT_OWNER_KINDS,
  ) {
    this.allowed = new Set(kinds.map((k) => (k.includes('/') ? k : `/${k}`)));
  }

  /** Takes the plan's owner needs: stops everything when no rule reads owners, refetches when the shape grew. */
  reconcile(needs: OwnerNeeds | null): void {
    const before = this.needs;
    this.needs = needs;
    if (before?.fields !== needs?.fields) {
      // Owners read on a miss were kept in the old shape: they go (the watches list again).
      for (const f of this.fetched.values()) f.part.remove(f.ns, f.name);
      this.fetched.clear();
    }
    for (const [id, watch] of this.watches) {
      const [gk, ns] = id.split('|');
      const cluster = this.scopes.get(gk)?.namespaced === false;
      const wanted = needs && (needs.namespaces === 'all' || cluster ? ns === '' : needs.namespaces.has(ns));
      if (!wanted) {
        this.watches.delete(id);
        this.partitions.delete(id);
        const [group, kind] = gk.split('/');
        this.objects.drop(group, kind, `owners:${id}`);
        void watch.stop();
      } else if (before?.fields !== needs.fields) {
        // Keep (and list) whole objects, or only their metadata, from now on.
        this.partitions.get(id)?.reshape(shapeOf(needs.fields));
        watch.retarget(needs.fields);
      }
    }
  }

  /**
   * Walks `levels` owners up from `obj` in `namespace`: undefined when every level can be answered from the caches
   * now, else a promise that resolves once it can. Problems met on the way (a kind not read) go to `problems`.
   */
  pending(
    obj: JsonObject,
    namespace: string,
    levels: number,
    problems: OwnerProblem[],
  ): Promise<void> | undefined {
    const step = this.step(obj, namespace, problems);
    if (step === null) return undefined;
    if (!(step instanceof Promise))
      // The owner's owner is in the owner's namespace ('' for a cluster-scoped owner).
      return levels > 1 ? this.pending(step, namespaceOf(step), levels - 1, problems) : undefined;
    return step.then(() => this.pending(obj, namespace, levels, problems));
  }

  // One level: the owner (to go on from), null (nothing more to look up), or what to wait for first.
  private step(
    obj: JsonObject,
    namespace: string,
    problems: OwnerProblem[],
  ): JsonObject | null | Promise<void> {
    const ref = controllerOf(obj);
    if (!ref || !this.needs) return null;
    const gk = groupKind(ref.group, ref.kind);
    if (!this.allowed.has(gk) || (ref.group === '' && ref.kind === 'Secret')) {
      problems.push({ kind: gk, why: `owners of kind ${ref.kind} are not read (--owner-kinds)` });
      return null;
    }
    // A cluster-scoped owner (a namespaced object may have one) is held, and looked up, under ''.
    const scope = this.scopes.get(gk);
    if (!scope || (scope.unreadable && Date.now() - scope.at > RETRY_UNREADABLE_MS))
      return this.resolveScope(ref, gk);
    if (scope.unreadable) {
      problems.push({ kind: gk, why: scope.unreadable });
      return null;
    }
    const where = scope.namespaced ? namespace : '';
    const watch = this.watchFor(ref.group, ref.version, ref.kind, where);
    if (watch.unreadable) {
      problems.push({ kind: gk, why: watch.unreadable });
      return null;
    }
    if (!watch.listed || (watch.listed === 'metadata' && this.needs.fields === 'all')) return watch.settled();
    const owner = this.objects.get(ref.group, ref.kind, where, ref.name);
    if (owner && (ref.uid === '' || metaString(owner, 'uid') === ref.uid)) return owner;
    const key = `${gk}|${where}|${ref.name}|${ref.uid}`;
    const until = this.absent.get(key);
    if (until !== undefined && until > Date.now()) return null;
    return this.fetch(key, ref, where);
  }

  // Discovery of an owner kind (one read per group version, shared with the watches): is it namespaced?
  private resolveScope(ref: { group: string; version: string; kind: string }, gk: string): Promise<void> {
    let running = this.inflight.get(gk);
    if (running) return running;
    running = this.deps.resolver
      .resolve(ref.group, ref.version, ref.kind)
      .then((found) => {
        if ('unreadable' in found) {
          // Served later perhaps (a CRD): discovery is read again when it is asked next.
          this.deps.resolver.forget();
          this.scopes.set(gk, { unreadable: found.unreadable, at: Date.now() });
        } else this.scopes.set(gk, { namespaced: found.resource.namespaced, at: Date.now() });
      })
      .finally(() => this.inflight.delete(gk));
    this.inflight.set(gk, running);
    return running;
  }

  private watchFor(
    group: string,
    version: string,
    kind: string,
    namespace: string,
  ): ReferenceWatch<'metadata' | 'all'> {
    const scope = this.needs?.namespaces === 'all' ? '' : namespace; // '' already for a cluster-scoped kind
    const id = `${groupKind(group, kind)}|${scope}`;
    let watch = this.watches.get(id);
    if (!watch) {
      const fields = this.needs?.fields ?? 'all';
      const part = this.objects.partition(group, kind, `owners:${id}`, shapeOf(fields));
      this.partitions.set(id, part);
      watch = new ReferenceWatch(
        { group, version, kind, namespace: scope, wants: fields },
        part,
        () => undefined,
        this.deps,
      );
      this.watches.set(id, watch);
    }
    return watch;
  }

  // One GET per missing owner at a time; found: held (shaped) until the watch has it; not found: absent a while.
  private fetch(
    key: string,
    ref: { group: string; version: string; kind: string; name: string; uid: string },
    namespace: string,
  ): Promise<void> {
    let running = this.inflight.get(key);
    if (running) return running;
    running = (async () => {
      const found = await this.deps.resolver.resolve(ref.group, ref.version, ref.kind);
      if ('unreadable' in found) return void this.absent.set(key, Date.now() + ABSENT_MS);
      try {
        const owner = await this.deps.client.request(
          'GET',
          `${collectionUrl(found.resource, namespace)}/${encodeURIComponent(ref.name)}`,
        );
        if (ref.uid !== '' && metaString(owner, 'uid') !== ref.uid)
          throw new KubeApiError('uid differs', 404, 'NotFound');
        const fields = this.needs?.fields ?? 'all';
        const part = this.objects.partition(ref.group, ref.kind, 'owners:fetched');
        part.reshape(shapeOf(fields));
        part.upsert({
          apiVersion: ref.group ? `${ref.group}/${ref.version}` : ref.version,
          kind: ref.kind,
          ...owner,
        });
        this.remember(key, part, namespace, ref.name);
      } catch {
        // Not found, forbidden, or the API server did not answer: absent for this request, asked again later.
        this.absent.set(key, Date.now() + ABSENT_MS);
      }
    })().finally(() => this.inflight.delete(key));
    this.inflight.set(key, running);
    return running;
  }

  private remember(key: string, part: ReferencePartition, ns: string, name: string): void {
    const now = Date.now();
    this.fetched.set(key, { at: now, part, ns, name });
    for (const [k, f] of this.fetched) {
      if (this.fetched.size <= MAX_FETCHED && now - f.at < 60_000) break;
      f.part.remove(f.ns, f.name);
      this.fetched.delete(k);
    }
    for (const [k, until] of this.absent) if (until <= now) this.absent.delete(k);
  }

  async stop(): Promise<void> {
    const all = [...this.watches.values()];
    this.watches.clear();
    await Promise.all(all.map((w) => w.stop()));
  }
}
