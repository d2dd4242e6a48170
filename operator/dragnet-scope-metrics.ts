import { Counter, Gauge, Registry } from 'prom-client';

/** The dragnet scope's metrics (operator/dragnet-scope.ts): its writes, and the registration it computed last. */
export interface DragnetScopeMetrics {
  writes: Counter<'result'>;
  conditions: Gauge;
  webhookRules: Gauge;
}

/** Registers the dragnet scope's metrics. */
export function dragnetScopeMetrics(registry: Registry): DragnetScopeMetrics {
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
