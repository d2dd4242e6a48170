import { collectDefaultMetrics, Registry } from 'prom-client';
import { DEFAULT_BUDGET } from '../util/budget';
import { DEFAULT_MAX_BODY_BYTES } from '../util/body-limit';
import { AnswerMetrics } from './answer-metrics';
import { admissionListener } from './dispatch';
import { routeTable } from './endpoints';
import { NamespaceFairness } from './fairness';
import { endpointHandlers } from './handlers';
import { createHealthServer } from './health';
import { closeServer, createAdmissionServer, HTTP_TIMEOUTS, listen, timeoutsOf, urlHost } from './listener';
import { WebhookMetrics } from './metrics';
import { RuleQuarantine, watchQuarantine } from './quarantine';
import { RuleFailures } from './rule-failures';
import { RuleUnenforced } from './rule-unenforced';
import { RunningWebhook, WebhookServerOptions } from './server-options';

export { WEBHOOK_PATHS } from './endpoints';
export { HTTP_TIMEOUTS } from './listener';
export type { NamespaceDemotion, RunningWebhook, WebhookServerOptions } from './server-options';

/** Starts the HTTPS admission server and the plain-HTTP health server; used by the operator and `serve --local`. */
export async function startWebhookServer(options: WebhookServerOptions): Promise<RunningWebhook> {
  const { store, logger } = options;
  const registry = options.registry ?? new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'modrule_' });
  const fairness = new NamespaceFairness({ ...options.fairness, budget: options.budget ?? DEFAULT_BUDGET });
  const metrics = new WebhookMetrics(registry, store, () => fairness.demotedCount());
  const answers = new AnswerMetrics(registry);
  const ownQuarantine = !(options.quarantine instanceof RuleQuarantine);
  const quarantine =
    options.quarantine instanceof RuleQuarantine
      ? options.quarantine
      : new RuleQuarantine(options.quarantine, store);
  const unwatchQuarantine = watchQuarantine(quarantine, registry, logger);
  const failures = options.failures ?? new RuleFailures({}, store);
  const unenforced = options.unenforced ?? new RuleUnenforced({}, store);
  let closing = false;

  const handlers = endpointHandlers(options, {
    store,
    logger,
    metrics,
    answers,
    fairness,
    quarantine,
    failures,
    unenforced,
  });
  const listener = admissionListener({
    routes: routeTable(handlers),
    logger,
    metrics,
    answers,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    peer: options.peer,
    closing: () => closing,
  });
  const timeouts = {
    headersMs: options.headersTimeoutMs ?? HTTP_TIMEOUTS.headersMs,
    requestMs: options.requestTimeoutMs ?? HTTP_TIMEOUTS.requestMs,
  };
  const { server, unsubscribeTls } = createAdmissionServer(options.tls, timeouts, listener, logger);
  const health = createHealthServer({
    port: options.healthPort,
    host: options.healthHost ?? options.host,
    registry,
    logger,
    isReady: () => !closing && server.listening && options.isReady(),
  });

  let port: number;
  let healthPort: number;
  try {
    port = await listen(server, options.port, options.host);
    healthPort = await listen(health, options.healthPort, options.healthHost ?? options.host);
  } catch (err) {
    unsubscribeTls();
    metrics.close();
    await Promise.all([closeServer(server, 0), closeServer(health, 0)]);
    throw err;
  }
  const closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
  let closed: Promise<void> | null = null;
  return {
    url: `https://${urlHost(options.host)}:${port}`,
    healthUrl: `http://${urlHost(options.healthHost ?? options.host)}:${healthPort}`,
    port,
    healthPort,
    registry,
    httpTimeouts: timeoutsOf(server),
    close: () => {
      if (!closed) {
        closing = true;
        closed = Promise.all([closeServer(server, closeTimeoutMs), closeServer(health, closeTimeoutMs)]).then(
          () => {
            unsubscribeTls();
            metrics.close();
            unwatchQuarantine();
            if (ownQuarantine) quarantine.close();
            if (!options.failures) failures.close();
            if (!options.unenforced) unenforced.close();
          },
        );
      }
      return closed;
    },
  };
}
