import type { ReferenceDecl } from '../../rule/references';
import { ReferenceObjects } from '../../store/references';
import { covers, keeps, NamedWatch, watchId, within } from '../../store/reference-plan';
import { ReferenceWatch, WatchDeps } from './watch';

/*
 * The watches for spec.references: one per kind and namespace that rules name, holding only the objects named or
 * selected. A rule that asks for more (a new name) lists that watch again; the old content keeps answering the
 * rules it answered meanwhile. A watch no rule needs any more is stopped and its objects dropped.
 */

/** How one reference can be answered now. */
export type DeclState =
  | { readonly state: 'found' | 'absent' }
  | { readonly state: 'pending' }
  | { readonly state: 'unreadable'; readonly why: string };

export class NamedWatches {
  private readonly watches = new Map<string, ReferenceWatch<NamedWatch>>();

  constructor(
    private readonly objects: ReferenceObjects,
    private readonly deps: WatchDeps,
  ) {}

  /** Starts, retargets and stops watches to hold what `plan` asks for. */
  reconcile(plan: ReadonlyMap<string, NamedWatch>): void {
    for (const [id, want] of plan) {
      const watch = this.watches.get(id);
      if (!watch) {
        const partition = this.objects.partition(want.group, want.kind, `named:${id}`);
        this.watches.set(
          id,
          new ReferenceWatch(
            {
              group: want.group,
              version: want.version,
              kind: want.kind,
              namespace: want.namespace,
              wants: want,
            },
            partition,
            (w) => (obj) => keeps(w, obj),
            this.deps,
          ),
        );
      } else if (!(within(want, watch.wants) && within(watch.wants, want))) {
        watch.retarget(want);
      }
    }
    for (const [id, watch] of this.watches) {
      if (plan.has(id)) continue;
      this.watches.delete(id);
      const [group, kind] = id.split('/');
      this.objects.drop(group, kind, `named:${id}`);
      void watch.stop();
    }
  }

  /** How a reference can be answered: from the content, absent (unreadable kind), or not yet. */
  state(decl: ReferenceDecl): DeclState {
    const watch = this.watches.get(watchId(decl));
    if (!watch) return { state: 'pending' };
    if (watch.listed && covers(watch.listed, decl)) {
      if (decl.objectName === undefined) return { state: 'found' };
      const found = this.objects.get(decl.group, decl.kind, decl.namespace, decl.objectName);
      return { state: found ? 'found' : 'absent' };
    }
    if (watch.unreadable) return { state: 'unreadable', why: watch.unreadable };
    return { state: 'pending' };
  }

  /** Resolves when the watch of `decl` settles next (undefined: there is none yet; reconcile first). */
  settled(decl: ReferenceDecl): Promise<void> | undefined {
    return this.watches.get(watchId(decl))?.settled();
  }

  /** Watches running, and objects held (metrics, tests). */
  get size(): number {
    return this.watches.size;
  }

  async stop(): Promise<void> {
    const all = [...this.watches.values()];
    this.watches.clear();
    await Promise.all(all.map((w) => w.stop()));
  }
}
