import { Counter, Gauge, Registry } from 'prom-client';

/** What the informer gauges read at scrape time. */
export interface InformerStates {
  informerStates(): ReadonlyArray<{ resource: string; synced: boolean; lists: number }>;
}

/**
 * The operator's own metrics, next to the webhook's on one registry: status writes and pod bindings (counted by the
 * parts that do them), informer health and certificate expiry (read at scrape time from the parts watched).
 */
export class OperatorMetrics {
  readonly statusWrites: Counter<'result'>;
  readonly podBindings: Counter<'result'>;

  constructor(private readonly registry: Registry) {
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

  /** Reports the informers' health: synced yet, and how many full lists so far (relists). */
  watchInformers(sync: InformerStates): void {
    new Gauge({
      name: 'modrule_informer_synced',
      help: '1 once the first full list of the resource has been loaded.',
      labelNames: ['resource'],
      registers: [this.registry],
      collect() {
        for (const i of sync.informerStates()) this.set({ resource: i.resource }, i.synced ? 1 : 0);
      },
    });
    new Gauge({
      name: 'modrule_informer_lists',
      help: 'Full lists loaded per resource since start; growth beyond 1 means relists (410 Gone, lost watches).',
      labelNames: ['resource'],
      registers: [this.registry],
      collect() {
        for (const i of sync.informerStates()) this.set({ resource: i.resource }, i.lists);
      },
    });
  }

  /** Reports when the served certificate expires (null: not loaded yet). */
  watchCertificate(expiry: () => Date | null): void {
    new Gauge({
      name: 'modrule_webhook_certificate_expiry_timestamp_seconds',
      help: 'When the served webhook certificate expires (Unix time); alert well before it.',
      registers: [this.registry],
      collect() {
        const at = expiry();
        if (at) this.set(Math.floor(at.getTime() / 1000));
      },
    });
  }
}
