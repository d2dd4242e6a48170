import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { RuleRef } from '../engine/admit';
import { RuleStore } from '../store/rules';

/** The webhook's Prometheus metrics, registered on one Registry (not the global one). */
export class WebhookMetrics {
  readonly requests: Counter<'endpoint' | 'operation' | 'result'>;
  readonly duration: Histogram<'endpoint' | 'operation' | 'result'>;
  readonly rulePatches: Counter<'namespace' | 'name'>;
  readonly ruleRejections: Counter<'namespace' | 'name'>;
  readonly ruleErrors: Counter<'namespace' | 'name'>;
  readonly storeRules: Gauge;
  readonly budgetExhausted: Counter<'namespace'>;
  readonly demotions: Counter<'namespace' | 'reason'>;
  readonly demoted: Gauge;
  private readonly unsubscribe: () => void;

  constructor(
    readonly registry: Registry,
    store: RuleStore,
    demotedNamespaces: () => number = () => 0,
  ) {
    this.requests = new Counter({
      name: 'modrule_webhook_requests_total',
      help: 'Admission requests answered, by endpoint, operation and result (allowed|patched|rejected|error|bad_request).',
      labelNames: ['endpoint', 'operation', 'result'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'modrule_webhook_request_duration_seconds',
      help: 'Time from the first byte of the request body to the response, by endpoint, operation and result.',
      labelNames: ['endpoint', 'operation', 'result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    this.rulePatches = new Counter({
      name: 'modrule_rule_patches_total',
      help: 'Objects patched, per ModRule.',
      labelNames: ['namespace', 'name'],
      registers: [registry],
    });
    this.ruleRejections = new Counter({
      name: 'modrule_rule_rejections_total',
      help: 'Objects rejected, per ModRule.',
      labelNames: ['namespace', 'name'],
      registers: [registry],
    });
    this.ruleErrors = new Counter({
      name: 'modrule_rule_errors_total',
      help: 'ModRule evaluations that failed at run time and were skipped, per ModRule.',
      labelNames: ['namespace', 'name'],
      registers: [registry],
    });
    this.storeRules = new Gauge({
      name: 'modrule_store_objects',
      help: 'Objects held by the rule store: ModRules in force, and Namespaces and Nodes cached for syntheticRefs.',
      labelNames: ['kind'],
      registers: [registry],
    });
    // Labelled by the request's namespace: bounded by the cluster's namespaces, and a series only appears for a
    // namespace that ran out, which is what the operator needs to find.
    this.budgetExhausted = new Counter({
      name: 'modrule_request_budget_exhausted_total',
      help: 'Dragnet requests whose evaluation budget (steps or time) ran out, by the namespace of the request ("" = cluster-scoped).',
      labelNames: ['namespace'],
      registers: [registry],
    });
    this.demotions = new Counter({
      name: 'modrule_namespace_demotions_total',
      help: 'Namespaces demoted (small budget, queued) or kept demoted, by namespace and reason.',
      labelNames: ['namespace', 'reason'],
      registers: [registry],
    });
    this.demoted = new Gauge({
      name: 'modrule_demoted_namespaces',
      help: 'Namespaces demoted right now.',
      registers: [registry],
      collect() {
        this.set(demotedNamespaces());
      },
    });
    const update = () => {
      const snapshot = store.snapshot();
      this.storeRules.set({ kind: 'ModRule' }, snapshot.ruleCount);
      this.storeRules.set({ kind: 'Namespace' }, snapshot.namespaceCount);
      this.storeRules.set({ kind: 'Node' }, snapshot.nodeCount);
    };
    update();
    this.unsubscribe = store.onChange(update);
  }

  /** Counts one answered request. */
  observe(endpoint: string, operation: string, result: string, seconds: number): void {
    const labels = { endpoint, operation, result };
    this.requests.inc(labels);
    this.duration.observe(labels, seconds);
  }

  /** Counts per-rule effects of one dragnet decision. */
  countRules(kind: 'patch' | 'rejection' | 'error', rules: readonly RuleRef[]): void {
    const counter =
      kind === 'patch' ? this.rulePatches : kind === 'rejection' ? this.ruleRejections : this.ruleErrors;
    for (const r of rules) counter.inc({ namespace: r.namespace, name: r.name });
  }

  /** Stops following the store. */
  close(): void {
    this.unsubscribe();
  }
}
