/**
 * Shares immutable compiled values by their source text: rules generated from one template (GitOps) and the
 * versions of one rule hold one compiled select, regex or template instead of one each. A value lives as long
 * as something still holds it (weak reference), so the map never pins rules that are gone; the keys of gone
 * values are swept as the map grows.
 */
const MIN_SWEEP = 1024;

export class Interner<T extends object> {
  private readonly map = new Map<string, WeakRef<T>>();
  // Entries whose value is gone are swept when the map has doubled since the last sweep (amortised O(1) per
  // insert). A FinalizationRegistry would drop them sooner but costs a 72-byte cell per entry, and most entries
  // (a rule's own template or criteria) live as long as their rule.
  private sweepAt = MIN_SWEEP;

  /** The value shared for `key`, made by `make` when there is none (make's errors pass through, nothing kept). */
  get(key: string, make: () => T): T {
    const hit = this.map.get(key)?.deref();
    if (hit !== undefined) return hit;
    const made = make();
    if (this.map.size >= this.sweepAt) this.sweep();
    this.map.set(key, new WeakRef(made));
    return made;
  }

  /** Entries, dead ones not yet swept included (for tests and metrics). */
  get size(): number {
    return this.map.size;
  }

  private sweep(): void {
    for (const [key, ref] of this.map) if (ref.deref() === undefined) this.map.delete(key);
    this.sweepAt = Math.max(MIN_SWEEP, this.map.size * 2);
  }
}
