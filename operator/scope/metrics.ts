import { Counter, Gauge, Registry } from 'prom-client';

/** The dragnet scope's metrics (docs/operator.md, "Metrics"). */
export interface ScopeMetrics {
  writes: Counter<'result'>;
  conditions: Gauge;
  webhookRules: Gauge;
}

/** Registers the scope's metrics; `wideFallback` is read at scrape time. */
export function createScopeMetrics(registry: Registry, wideFallback: () => boolean): ScopeMetrics {
  new Gauge({
    name: 'modrule_dragnet_scope_wide_fallback',
    help: 'Whether the dragnet registration is held at the configured (wide) net because a narrower one could not be written or confirmed (1) or not (0).',
    registers: [registry],
    collect() {
      this.set(wideFallback() ? 1 : 0);
    },
  });
  return {
    writes: new Counter({
      name: 'modrule_dragnet_scope_writes_total',
      help: 'Writes of the dragnet registration, by result (ok|conflict|invalid|failed).',
      labelNames: ['result'],
      registers: [registry],
    }),
    conditions: new Gauge({
      name: 'modrule_dragnet_scope_conditions',
      help: 'matchConditions of the dragnet registration this replica computed last.',
      registers: [registry],
    }),
    webhookRules: new Gauge({
      name: 'modrule_dragnet_scope_webhook_rules',
      help: 'rules entries of the dragnet registration this replica computed last.',
      registers: [registry],
    }),
  };
}
