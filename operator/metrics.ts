import { Counter, Gauge, Registry } from 'prom-client';

/** What the operator metrics read at scrape time. */
export interface OperatorMetricSources {
  informers: () => ReadonlyArray<{ resource: string; synced: boolean; lists: number }>;
  /** Expiry of the served certificate (self mode), or null. */
  certificateExpiry: () => Date | null;
}

/** The operator's own metrics: informer health and certificate expiry, next to the webhook's on one registry. */
export class OperatorMetrics {
  readonly statusWrites: Counter<'result'>;
  readonly podBindings: Counter<'result'>;

  constructor(registry: Registry, sources: OperatorMetricSources) {
    new Gauge({
      name: 'modrule_informer_synced',
      help: '1 once the first full list of the resource has been loaded.',
      labelNames: ['resource'],
      registers: [registry],
      collect() {
        for (const i of sources.informers()) this.set({ resource: i.resource }, i.synced ? 1 : 0);
      },
    });
    new Gauge({
      name: 'modrule_informer_lists',
      help: 'Full lists loaded per resource since start; growth beyond 1 means relists (410 Gone, lost watches).',
      labelNames: ['resource'],
      registers: [registry],
      collect() {
        for (const i of sources.informers()) this.set({ resource: i.resource }, i.lists);
      },
    });
    new Gauge({
      name: 'modrule_webhook_certificate_expiry_timestamp_seconds',
      help: 'When the served webhook certificate expires (Unix time); alert well before it.',
      registers: [registry],
      collect() {
        const expiry = sources.certificateExpiry();
        if (expiry) this.set(Math.floor(expiry.getTime() / 1000));
      },
    });
    this.statusWrites = new Counter({
      name: 'modrule_status_writes_total',
      help: 'ModRule status subresource writes, by result (ok|failed).',
      labelNames: ['result'],
      registers: [registry],
    });
    this.podBindings = new Counter({
      name: 'modrule_pod_bindings_total',
      help: 'Pod bindings handled, by result (annotated|not-requested|already-annotated|pod-gone|failed).',
      labelNames: ['result'],
      registers: [registry],
    });
  }
}
