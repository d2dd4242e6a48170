import { collectDefaultMetrics, Registry } from 'prom-client';
import { DEFAULT_MAX_BODY_BYTES } from '../util/body-limit';
import { noThreadClock } from '../util/cpu-clock';
import { AnswerMetrics } from './answer-metrics';
import { admissionListener } from './dispatch';
import { Route } from './endpoints';
import { Handler } from './handler';
import { standardEndpoints } from './handlers';
import { createHealthServer } from './health';
import { closeServer, createAdmissionServer, HTTP_TIMEOUTS, listen, timeoutsOf, urlHost } from './listener';
import { RequestMetrics } from './metrics';
import { PeerReceiver } from './peer';
import {
  EndpointOptions,
  EndpointRegistration,
  RunningWebhook,
  ServerServices,
  TransportOptions,
} from './server-options';

export { WEBHOOK_PATHS } from './endpoints';
export { HTTP_TIMEOUTS } from './listener';
export type {
  DragnetOptions,
  EndpointOptions,
  EndpointRegistration,
  ServerServices,
  NamespaceDemotion,
  RuleEndpointOptions,
  RunningWebhook,
  TransportOptions,
} from './server-options';

/**
 * The HTTPS admission server and its plain-HTTP health/metrics server (as controller-runtime's webhook.Server): built
 * from transport options, endpoints registered by path, then started. Every request is routed by its path, read and
 * checked (4xx with the reason when it is not an AdmissionReview POST), handed to its endpoint and answered.
 */
export class WebhookServer {
  private readonly routes = new Map<string, Route<Handler>>();
  private readonly registrations: EndpointRegistration[] = [];
  private peer: PeerReceiver | undefined;
  readonly registry: Registry;
  private readonly services: ServerServices;
  private readonly requests: RequestMetrics;

  constructor(private readonly transport: TransportOptions) {
    this.registry = transport.registry ?? new Registry();
    if (transport.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'modrule_' });
    this.requests = new RequestMetrics(this.registry);
    this.services = {
      logger: transport.logger,
      registry: this.registry,
      answers: new AnswerMetrics(this.registry),
    };
  }

  /** Serves `path` with the endpoint (before start). */
  register(path: string, registration: EndpointRegistration): this {
    if (this.routes.has(path)) throw new Error(`${path} is registered already`);
    this.routes.set(path, { endpoint: registration.endpoint, handler: registration.handler(this.services) });
    this.registrations.push(registration);
    return this;
  }

  /** Takes the signed notices of peer replicas (POST /peer/admitted). */
  registerPeer(receiver: PeerReceiver): this {
    this.peer = receiver;
    return this;
  }

  /** Listens on both ports; the running servers' addresses and close(). */
  async start(): Promise<RunningWebhook> {
    const { transport } = this;
    const { logger } = transport;
    // Said once: on such a runtime the budget and fairness charge the process's CPU time (docs/webhook.md).
    const noClock = noThreadClock();
    if (noClock)
      logger.warn(`${noClock}: run Node 24 (the image's) to charge a rule its own thread's CPU time`);
    let closing = false;
    const listener = admissionListener({
      routes: this.routes,
      logger,
      metrics: this.requests,
      answers: this.services.answers,
      maxBodyBytes: transport.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      peer: this.peer,
      closing: () => closing,
    });
    const timeouts = {
      headersMs: transport.headersTimeoutMs ?? HTTP_TIMEOUTS.headersMs,
      requestMs: transport.requestTimeoutMs ?? HTTP_TIMEOUTS.requestMs,
    };
    const { server, unsubscribeTls } = createAdmissionServer(transport.tls, timeouts, listener, logger);
    const healthHost = transport.healthHost ?? transport.host;
    const health = createHealthServer({
      port: transport.healthPort,
      host: healthHost,
      registry: this.registry,
      logger,
      isReady: () => !closing && server.listening && transport.isReady(),
    });
    const release = () => {
      unsubscribeTls();
      for (const r of this.registrations) r.close?.();
    };
    let port: number;
    let healthPort: number;
    try {
      port = await listen(server, transport.port, transport.host);
      healthPort = await listen(health, transport.healthPort, healthHost);
    } catch (err) {
      release();
      await Promise.all([closeServer(server, 0), closeServer(health, 0)]);
      throw err;
    }
    const closeTimeoutMs = transport.closeTimeoutMs ?? 10_000;
    let closed: Promise<void> | null = null;
    return {
      url: `https://${urlHost(transport.host)}:${port}`,
      healthUrl: `http://${urlHost(healthHost)}:${healthPort}`,
      port,
      healthPort,
      registry: this.registry,
      httpTimeouts: timeoutsOf(server),
      close: () => {
        closing = true;
        closed ??= Promise.all([
          closeServer(server, closeTimeoutMs),
          closeServer(health, closeTimeoutMs),
        ]).then(release);
        return closed;
      },
    };
  }
}

/** Starts a server with every endpoint modrule serves (and the peer notices, when given); the operator and `serve`. */
export async function startWebhookServer(
  transport: TransportOptions,
  endpoints: EndpointOptions,
): Promise<RunningWebhook> {
  const server = new WebhookServer(transport);
  for (const [path, registration] of standardEndpoints(endpoints)) server.register(path, registration);
  if (endpoints.peer) server.registerPeer(endpoints.peer);
  return server.start();
}
