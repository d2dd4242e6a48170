import { Counter, Gauge, Registry } from 'prom-client';
import { parseGoDuration } from './hold';

/**
 * Why a request was let through without its rules (a fail-open answer):
 * - `engine_error`: the dragnet's evaluation threw; answered allowed, unchanged, with a warning;
 * - `handler_error`: an endpoint's handler threw; answered allowed, unchanged, with a warning;
 * - `rules_not_loaded`: the rules were still not loaded when the hold ran out; answered HTTP 503, so the webhook's
 *   failurePolicy decides (the bundle's Ignore: admitted unchanged);
 * - `references_not_synced`: an object the request's rules read was still not in the reference caches when the
 *   hold ran out; answered HTTP 503 as well.
 */
export type FailOpenReason = 'engine_error' | 'handler_error' | 'rules_not_loaded' | 'references_not_synced';

/** The endpoints and the reasons each can fail open for: their series exist at 0 from the start. */
const FAIL_OPEN_SERIES: ReadonlyArray<[string, FailOpenReason]> = [
  ['dragnet', 'engine_error'],
  ['dragnet', 'handler_error'],
  ['dragnet', 'rules_not_loaded'],
  ['dragnet', 'references_not_synced'],
  ['validate-modrule', 'handler_error'],
  ['mutate-modrule', 'handler_error'],
  ['podbinding', 'handler_error'],
];

/**
 * What the webhook's answers say beyond the request counts: fail-open answers, and the timeout the API server gives
 * each webhook (it sends the configuration's timeoutSeconds as `?timeout=10s` on every call), so that latency
 * alerts compare with the timeout actually configured.
 */
export class AnswerMetrics {
  private readonly failOpen: Counter<'endpoint' | 'reason'>;
  private readonly failClosed: Counter<'endpoint' | 'reason'>;
  private readonly timeout: Gauge<'endpoint'>;
  // The last URL seen per endpoint: parsed again only when it changes (it almost never does).
  private readonly urls = new Map<string, string>();

  constructor(registry: Registry) {
    this.failOpen = new Counter({
      name: 'modrule_webhook_fail_open_total',
      help:
        'Admission requests let through without their ModRules because of modrule itself, by endpoint and reason ' +
        '(engine_error|handler_error: allowed unchanged; rules_not_loaded, references_not_synced: HTTP 503, the failurePolicy decides).',
      labelNames: ['endpoint', 'reason'],
      registers: [registry],
    });
    // Present at 0 from the start, so that the first fail-open answer is an increase Prometheus can see.
    for (const [endpoint, reason] of FAIL_OPEN_SERIES) this.failOpen.inc({ endpoint, reason }, 0);
    this.failClosed = new Counter({
      name: 'modrule_webhook_fail_closed_total',
      help:
        'Admission requests refused because of modrule itself, by endpoint and reason (handler_error): the ModRule ' +
        'webhooks fail closed, so a ModRule write that modrule could not validate or put in force is refused.',
      labelNames: ['endpoint', 'reason'],
      registers: [registry],
    });
    for (const endpoint of ['validate-modrule', 'mutate-modrule'])
      this.failClosed.inc({ endpoint, reason: 'handler_error' }, 0);
    this.timeout = new Gauge({
      name: 'modrule_webhook_timeout_seconds',
      help: 'The timeout the API server gives each webhook endpoint (the ?timeout= of its latest call): its timeoutSeconds.',
      labelNames: ['endpoint'],
      registers: [registry],
    });
  }

  /** Counts one request let through without its rules. */
  failedOpen(endpoint: string, reason: FailOpenReason): void {
    this.failOpen.inc({ endpoint, reason });
  }

  /** Counts one request refused because modrule failed (the ModRule webhooks fail closed). */
  failedClosed(endpoint: string, reason: 'handler_error'): void {
    this.failClosed.inc({ endpoint, reason });
  }

  /** Notes the timeout a call to `endpoint` carries in its URL (`/dragnet-webhook?timeout=10s`), if any. */
  called(endpoint: string, url: string | undefined): void {
    if (!url || this.urls.get(endpoint) === url) return;
    this.urls.set(endpoint, url);
    const at = url.indexOf('?');
    if (at < 0) return;
    const text = new URLSearchParams(url.slice(at + 1)).get('timeout');
    const ms = text ? parseGoDuration(text) : null;
    if (ms !== null) this.timeout.set({ endpoint }, ms / 1000);
  }
}
