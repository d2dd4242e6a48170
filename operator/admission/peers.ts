import { Agent, request } from 'node:https';
import { Counter, Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { nameOf } from '../../util/meta';
import { PEER_PATH, PeerNotice, SIGNATURE_HEADER, signNotice } from '../../webhook/peer';
import { RuleVersion } from '../rules/admitted';
import { Informer } from '../../kube/informer';
import { KubeClient } from '../../kube/kube';

export interface PeerNotifierOptions {
  client: KubeClient;
  logger: Logger;
  /** The operator's namespace: the webhook Service's EndpointSlices are there. */
  namespace: string;
  /** The webhook Service; default kubemod-webhook-service. */
  service?: string;
  /** The webhook port every replica listens on. */
  port: number;
  /** This replica's pod IP (POD_IP), left out of the peers. */
  selfIp?: string;
  /** Peers given as base URLs (https://10.0.0.5:9443): no discovery. */
  peers?: readonly string[];
  /** The signing key (the same on every replica). */
  key: () => string;
  /** Per notice; default 1 s. */
  timeoutMs?: number;
  /** How a notice travels; default HTTPS to `${url}/peer/admitted` (tests and the simulation bring their own). */
  transport?: PeerTransport;
  registry?: Registry;
}

/** Sends one signed notice to a peer's base URL: 'ok' once it took it, else why not. */
export type PeerTransport = (
  url: string,
  body: string,
  signature: string,
) => Promise<'ok' | { failed: string }>;

/**
 * The addresses of an EndpointSlice, not-ready ones included (a replica starting up computes the registration too),
 * terminating ones left out.
 */
function addressesOf(slice: JsonObject): string[] {
  const endpoints = Array.isArray(slice.endpoints) ? slice.endpoints : [];
  return endpoints.flatMap((e) => {
    const ep = e as JsonObject;
    const conditions = (ep.conditions ?? {}) as JsonObject;
    if (conditions.terminating === true || !Array.isArray(ep.addresses)) return [];
    return ep.addresses.filter((a): a is string => typeof a === 'string');
  });
}

/**
 * Tells the other replicas of a ModRule this one admits, before it answers (webhook/peer.ts): they hold the dragnet
 * requests the rule could reach until their own store has it, and count it in their computations of the registration.
 * Peers are the endpoints of the webhook Service (its EndpointSlices), or a list given. A peer that does not answer within the timeout is passed over (logged,
 * counted): a replica that cannot take a notice can hardly answer the API server either.
 */
export class PeerNotifier {
  private readonly slices = new Map<string, string[]>();
  private readonly informer: Informer | null;
  private readonly agent = new Agent({ keepAlive: true, rejectUnauthorized: false });
  private readonly sent: Counter<'result'> | null;

  constructor(private readonly options: PeerNotifierOptions) {
    const service = options.service ?? 'kubemod-webhook-service';
    this.informer = options.peers
      ? null
      : new Informer({
          client: options.client,
          logger: options.logger,
          path: `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/endpointslices`,
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          labelSelector: `kubernetes.io/service-name=${service}`,
          handlers: {
            replace: (items) => {
              this.slices.clear();
              for (const s of items) this.slices.set(nameOf(s), addressesOf(s));
            },
            upsert: (s) => void this.slices.set(nameOf(s), addressesOf(s)),
            remove: (s) => void this.slices.delete(nameOf(s)),
          },
        });
    this.sent = options.registry
      ? new Counter({
          name: 'modrule_peer_notices_total',
          help: 'Notices of admitted ModRules sent to peer replicas, by result (ok|failed).',
          labelNames: ['result'],
          registers: [options.registry],
        })
      : null;
    // Both series exist from the start, so the first notice is an increase Prometheus can see.
    for (const result of ['ok', 'failed']) this.sent?.inc({ result }, 0);
  }

  start(): void {
    this.informer?.start();
  }

  async stop(): Promise<void> {
    await this.informer?.stop();
    this.agent.destroy();
  }

  /** The peers' base URLs now. */
  urls(): string[] {
    if (this.options.peers) return [...this.options.peers];
    const ips = new Set([...this.slices.values()].flat());
    if (this.options.selfIp) ips.delete(this.options.selfIp);
    return [...ips].map((ip) => `https://${ip.includes(':') ? `[${ip}]` : ip}:${this.options.port}`);
  }

  /** Tells every peer of a rule version (and the rule); resolves once each answered or was passed over. */
  async notify(version: RuleVersion, rule?: JsonObject): Promise<void> {
    const urls = this.urls();
    if (urls.length === 0) return;
    const notice: PeerNotice = { ...version, sent: Date.now(), ...(rule ? { rule } : {}) };
    const body = JSON.stringify(notice);
    const signature = signNotice(body, this.options.key());
    await Promise.all(urls.map((url) => this.send(url, body, signature)));
  }

  private async send(url: string, body: string, signature: string): Promise<void> {
    const result = await (this.options.transport ?? ((u, b, s) => this.post(u, b, s)))(url, body, signature);
    this.sent?.inc({ result: result === 'ok' ? 'ok' : 'failed' });
    if (result !== 'ok')
      this.options.logger.warn('a peer replica did not take a notice', { peer: url, error: result.failed });
  }

  /** The default transport: a POST over HTTPS (the peer's certificate is not checked: the notice is signed). */
  private post(url: string, body: string, signature: string): Promise<'ok' | { failed: string }> {
    return new Promise((resolve) => {
      const done = (result: 'ok' | 'failed', why?: string) =>
        resolve(result === 'ok' ? 'ok' : { failed: why ?? 'failed' });
      const req = request(`${url}${PEER_PATH}`, {
        method: 'POST',
        agent: this.agent,
        timeout: this.options.timeoutMs ?? 1000,
        headers: { 'Content-Type': 'application/json', [SIGNATURE_HEADER]: signature },
      });
      req.on('response', (res) => {
        res.resume();
        if (res.statusCode === 204) done('ok');
        else done('failed', `HTTP ${res.statusCode ?? 0}`);
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (err) => done('failed', messageOf(err)));
      req.end(body);
    });
  }
}
