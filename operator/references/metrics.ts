import { Gauge, Registry } from 'prom-client';
import type { ReferenceCaches } from './caches';

/**
 * modrule_reference_objects{kind}: the objects the reference caches hold, by group/Kind (read at scrape time), so the
 * memory they take can be watched.
 */
export function watchReferences(registry: Registry, caches: ReferenceCaches): void {
  new Gauge({
    name: 'modrule_reference_objects',
    help: 'Objects held for rules that read other objects (syntheticRefs.owner, spec.references), by kind.',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, n] of caches.reader.counts()) this.set({ kind }, n);
    },
  });
}
