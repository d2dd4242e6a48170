/**
 * Shares immutable compiled values by their source text: rules generated from one template (GitOps) and the
 * versions of one rule hold one compiled select, regex or template instead of one each. An entry lives as long
 * as something still holds its value (weak reference), so the map never pins rules that are gone.
 */
export class Interner<T extends object> {
  private readonly map = new Map<string, WeakRef<T>>();
  private readonly registry = new FinalizationRegistry<string>((key) => {
    if (this.map.get(key)?.deref() === undefined) this.map.delete(key);
  });

  /** The value shared for `key`, made by `make` when there is none (make's errors pass through, nothing kept). */
  get(key: string, make: () => T): T {
    const hit = this.map.get(key)?.deref();
    if (hit !== undefined) return hit;
    const made = make();
    this.map.set(key, new WeakRef(made));
    this.registry.register(made, key);
    return made;
  }

  /** Live entries (for tests and metrics). */
  get size(): number {
    return this.map.size;
  }
}
