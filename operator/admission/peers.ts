import { Agent, request } from 'node:https';
import { Counter, Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { nameOf, objectKey } from '../../util/meta';
import {
  PEER_PATH,
  PeerKeys,
  PeerNotice,
  PeerReceiver,
  SIGNATURE_HEADER,
  signatures,
} from '../../webhook/peer';
import { AdmittedRules, RuleVersion, specDigest } from '../rules/admitted';
import { RuleStore } from '../../store/rules';
import { Informer } from '../../kube/informer';
import { KubeClient } from '../../kube/kube';
import { sleep } from '../../kube/backoff';
import { PeerEndpoint, peerEndpoints, sliceEndpoints } from './peer-endpoints';

export interface PeerNotifierOptions {
  client: KubeClient;
  logger: Logger;
  /** The operator's namespace: the webhook Service's EndpointSlices are there. */
  namespace: string;
  /** The webhook Service; default kubemod-webhook-service. */
  service?: string;
  /** The name of the Service's webhook port: each replica is addressed at its slice's port of that name; default webhook. */
  portName?: string;
  /** This replica's webhook port: with selfIp, its own endpoint; a slice without a port of that name gets it too. */
  port: number;
  /** This replica's pod IP (POD_IP): its endpoint (with `port`) is left out of the peers. */
  selfIp?: string;
  /** Peers given as base URLs (https://10.0.0.5:9443): no discovery. */
  peers?: readonly string[];
  /** The signing keys, the current one first (webhook/peer.ts PeerKeys). */
  keys: () => readonly string[];
  /** Re-reads the shared secret the keys come from, when a peer refused the signatures (PeerKeys.refresh). */
  refreshKeys?: () => Promise<void>;
  /** Per attempt; default 1 s. */
  timeoutMs?: number;
  /** This replica's clock (default Date.now): the deadlines callers pass are times on it. */
  now?: () => number;
  /** How one attempt travels; default HTTPS to `${url}/peer/admitted` (tests and the simulation bring their own). */
  transport?: PeerTransport;
  registry?: Registry;
}

/** A peer that did not take a notice in the time it was given. */
export interface PeerFailure {
  /** Its base URL. */
  peer: string;
  /** The last attempt's error (an HTTP status, a connection error, a timeout). */
  error: string;
  attempts: number;
}

/** One attempt's result: taken, or the HTTP status (0: no answer) and why not. */
export type Attempt = { ok: true } | { ok: false; status: number; error: string };

/** Sends one signed notice (its signatures header value) to a peer's base URL. */
export type PeerTransport = (
  url: string,
  body: string,
  signatures: string,
  timeoutMs: number,
) => Promise<Attempt>;

/**
 * Tells the other replicas of a ModRule this one admits, before it answers (webhook/peer.ts): they hold the dragnet
 * requests the rule could reach until their own store has it, and count it in their computations of the registration.
 * Peers are the endpoints of the webhook Service (its EndpointSlices, each at its own port), or a list given. A notice
 * a ready peer does not take is tried again until the time the admission gives it (a 401 first re-reads the shared
 * secret), unless the peer left the endpoints meanwhile; what still fails is returned (the writer's warning), logged
 * and counted. A peer that took none of the attempts of its last notice gets one attempt per notice until it takes
 * one again, so a replica that is gone but still listed costs each ModRule write one attempt, not the whole budget.
 * A peer not ready gets one attempt and its failure is only counted: the API server sends it nothing until its
 * readiness probe passes, seconds later, by when its own watch has brought the rule.
 */
export class PeerNotifier {
  private readonly slices = new Map<string, PeerEndpoint[]>();
  private readonly informer: Informer | null;
  private readonly agent = new Agent({ keepAlive: true, rejectUnauthorized: false });
  private readonly sent: Counter<'result'> | null;
  /** Peers that took none of the attempts of their last notice. */
  private readonly suspect = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly options: PeerNotifierOptions) {
    this.now = options.now ?? Date.now;
    const service = options.service ?? 'kubemod-webhook-service';
    const portName = options.portName ?? 'webhook';
    const endpoints = (s: JsonObject) => sliceEndpoints(s, portName, options.port);
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
              for (const s of items) this.slices.set(nameOf(s), endpoints(s));
            },
            upsert: (s) => void this.slices.set(nameOf(s), endpoints(s)),
            remove: (s) => void this.slices.delete(nameOf(s)),
          },
        });
    this.sent = options.registry
      ? new Counter({
          name: 'modrule_peer_notices_total',
          help: 'Notices of admitted ModRules sent to peer replicas, by result (ok|retried|failed).',
          labelNames: ['result'],
          registers: [options.registry],
        })
      : null;
    // Every series exists from the start, so the first notice is an increase Prometheus can see.
    for (const result of ['ok', 'retried', 'failed']) this.sent?.inc({ result }, 0);
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
    return [...this.peers().keys()];
  }

  /** The peers by base URL, and whether each is ready (a list given: all of them). */
  private peers(): Map<string, { ready: boolean }> {
    if (this.options.peers) return new Map(this.options.peers.map((url) => [url, { ready: true }]));
    const self = this.options.selfIp ? { address: this.options.selfIp, port: this.options.port } : undefined;
    return peerEndpoints(this.slices.values(), self);
  }

  /**
   * Tells every peer of a rule version (and the rule), trying again until `by` (ms since the epoch; default: one
   * attempt); resolves with the peers that did not take it.
   */
  async notify(
    version: RuleVersion,
    rule?: JsonObject,
    by?: number,
    answerBy?: number,
  ): Promise<PeerFailure[]> {
    const peers = [...this.peers()];
    if (peers.length === 0) return [];
    // How long the admission may still run: a duration, so that the peers' clocks need not agree with this one's.
    const answerWithinMs = answerBy !== undefined ? Math.max(0, answerBy - this.now()) : undefined;
    const notice: PeerNotice = {
      ...version,
      sent: this.now(),
      ...(answerWithinMs !== undefined ? { answerWithinMs } : {}),
      ...(rule ? { rule } : {}),
    };
    const body = JSON.stringify(notice);
    const deadline = by ?? this.now() + (this.options.timeoutMs ?? 1000);
    const results = await Promise.all(
      peers.map(async ([url, { ready }]) => ({
        ready,
        failure: await this.deliver(url, body, ready ? deadline : 0),
      })),
    );
    const ruleKey = objectKey(version.namespace, version.name);
    const failures: PeerFailure[] = [];
    for (const { ready, failure } of results) {
      if (!failure) continue;
      if (!ready) {
        this.options.logger.debug('a peer replica not ready did not take a notice', {
          ...failure,
          rule: ruleKey,
        });
        continue;
      }
      this.options.logger.warn('a peer replica did not take the notice of an admitted ModRule', {
        ...failure,
        rule: ruleKey,
      });
      failures.push(failure);
    }
    return failures;
  }

  /**
   * Tells the peers, just before the answer, that the admission of a rule version is answered (allowed: its write
   * lands now or never; refused: it never does): a peer still holding for it stops waiting for a write that failed
   * after the webhook, and a peer that never heard of it (it started, or restarted, after the first notice) holds
   * for it from now on. One attempt each, to the peers listed now, within `timeoutMs`.
   */
  async answered(
    version: RuleVersion,
    answered: 'allowed' | 'refused',
    rule?: JsonObject,
    withinMs = 500,
  ): Promise<PeerFailure[]> {
    // An allowed rule travels again: a peer that never heard of it counts it in its scope, not only holds for it.
    const notice: PeerNotice = {
      ...version,
      sent: this.now(),
      answered,
      ...(answered === 'allowed' && rule ? { rule } : {}),
    };
    const body = JSON.stringify(notice);
    // Tried again within `withinMs`, ready peers only; one that does not take it is said (it may have restarted
    // since the first notice and not know of the rule at all).
    const by = this.now() + withinMs;
    const ready = [...this.peers()].filter(([, p]) => p.ready).map(([url]) => url);
    const failures = await Promise.all(ready.map((url) => this.deliver(url, body, by)));
    return failures.filter((f): f is PeerFailure => f !== null);
  }

  /** One peer's notice, tried until it is taken or `by` (0: once); null when taken. */
  private async deliver(url: string, body: string, by: number): Promise<PeerFailure | null> {
    const once = by === 0 || this.suspect.has(url);
    const timeout = this.options.timeoutMs ?? 1000;
    for (let attempt = 1, pause = 50; ; attempt++, pause = Math.min(pause * 2, 1000)) {
      const result = await this.post(
        url,
        body,
        once ? timeout : Math.max(50, Math.min(timeout, by - this.now())),
      );
      if (result.ok) {
        this.suspect.delete(url);
        this.sent?.inc({ result: attempt === 1 ? 'ok' : 'retried' });
        if (attempt > 1)
          this.options.logger.info('a peer replica took a notice', { peer: url, attempts: attempt });
        return null;
      }
      // 401: the replicas' shared secret changed and one of the two has not seen it yet.
      if (result.status === 401) await this.options.refreshKeys?.();
      // 400 is a notice the peer will never take (malformed, or older than it accepts).
      const again = !once && result.status !== 400 && this.now() + pause < by && this.listed(url);
      if (!again) {
        if (by !== 0) this.suspect.add(url);
        this.sent?.inc({ result: 'failed' });
        return { peer: url, error: result.error, attempts: attempt };
      }
      await sleep(pause);
    }
  }

  /** Whether the peer is still one of the endpoints (a replica taken out of them is not tried again). */
  private listed(url: string): boolean {
    return this.options.peers !== undefined || this.urls().includes(url);
  }

  private post(url: string, body: string, timeoutMs: number): Promise<Attempt> {
    const signed = signatures(body, this.options.keys());
    if (this.options.transport) return this.options.transport(url, body, signed, timeoutMs);
    return new Promise((resolve) => {
      const req = request(`${url}${PEER_PATH}`, {
        method: 'POST',
        agent: this.agent,
        timeout: timeoutMs,
        headers: {
          'Content-Type': 'application/json',
          [SIGNATURE_HEADER]: signed,
        },
      });
      req.on('response', (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(status === 204 ? { ok: true } : { ok: false, status, error: `HTTP ${status}` });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (err) => resolve({ ok: false, status: 0, error: messageOf(err) }));
      req.end(body);
    });
  }
}

/** Where the keys of the peer notices come from (operator/certs/serving.ts ServingCertificates). */
export interface PeerSecretSource {
  /** The secret every replica holds; read at each notice (it changes with the certificates). */
  peerSecret(): string;
  /** Reads it again now (a peer refused this replica's signatures, or it could not verify a peer's). */
  reread(): Promise<void>;
}

/**
 * This replica's side of the peer notices: the notifier (a part the operator starts) and the receiving end's keys, both
 * on one PeerKeys over the certificates' shared secret, so the key before its last change is kept for both.
 */
export function createPeers(
  options: Omit<PeerNotifierOptions, 'keys' | 'refreshKeys'>,
  secret: PeerSecretSource,
): { notifier: PeerNotifier; keys: Pick<PeerReceiver, 'keys' | 'refresh'> } {
  const keys = new PeerKeys(
    () => secret.peerSecret(),
    () => secret.reread(),
  );
  const notifier = new PeerNotifier({
    ...options,
    keys: () => keys.keys(),
    refreshKeys: () => keys.refresh(),
  });
  return { notifier, keys: { keys: () => keys.keys(), refresh: () => void keys.refresh() } };
}

/**
 * A peer's notice, taken: a rule it admits is counted here too (held for until stored, and in this replica's
 * computations of the scope), its write expected once the peer's admission answered; the peer's word that it
 * answered (allowed: the write lands now or never) or refused (it never does) ends the wait sooner.
 */
export function receivePeerNotice(
  admitted: AdmittedRules,
  store: Pick<RuleStore, 'compileRule'>,
  received: PeerNotice,
): void {
  const spec = specDigest(received.rule);
  const notice = spec ? { ...received, spec } : received;
  if (notice.answered === 'refused') return admitted.forget(notice);
  if (notice.answered === 'allowed') {
    // Not heard of before (this replica started after the first notice): held for, and counted, from now on.
    if (!admitted.pendingVersion(notice))
      admitted.admit(notice, notice.rule ? (store.compileRule(notice.rule).rule ?? null) : null, 0);
    return admitted.answered(notice);
  }
  const rule = notice.rule ? (store.compileRule(notice.rule).rule ?? null) : null;
  admitted.admit(notice, rule, notice.answerWithinMs ?? 0);
}
