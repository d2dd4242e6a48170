import { join } from 'node:path';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { Backoff, sleep } from '../../kube/backoff';
import { KubeClient } from '../../kube/kube';
import { FileTlsSource, TlsSource } from '../../webhook/tls';
import { Runnable } from '../controller/lifecycle';
import { expiryOf } from './certificates';
import { SelfSignedCertificates } from './self-signed';

/** Where the serving certificate comes from: made and rotated by the operator, or mounted (cert-manager). */
export type CertMode = 'self' | 'external';

export interface ServingCertificatesOptions {
  client: KubeClient;
  logger: Logger;
  mode: CertMode;
  /** The operator's namespace: the certificate Secret (self mode). */
  namespace: string;
  /** external mode: folder with tls.crt and tls.key (cert-manager's mounted Secret). */
  certDir: string;
  /** self mode: extra SANs for the serving certificate (a webhook reached by URL, e.g. in e2e runs). */
  extraHosts?: string[];
  /** Cancels a start-up that is still waiting for the API server. */
  signal?: AbortSignal;
}

/** Retries `fn` with backoff until it succeeds or the signal aborts (the API server may not be up yet). */
async function untilDone<T>(
  what: string,
  fn: () => Promise<T>,
  logger: Logger,
  signal?: AbortSignal,
): Promise<T> {
  const backoff = new Backoff({ initialMs: 1000, maxMs: 30_000 });
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (signal?.aborted) throw err;
      logger.warn(`${what} failed; retrying`, { error: messageOf(err) });
      await sleep(backoff.next(), signal);
      if (signal?.aborted) throw new Error(`${what}: cancelled`);
    }
  }
}

/**
 * The webhook's serving certificate as one part of the operator: started once it is available (self mode: the
 * Secret made or read and caBundle set; external mode: the mounted files read), retrying while the API server or the
 * mount is not there yet. Its TLS source is what the webhook server and the peer notices use from then on.
 */
export class ServingCertificates implements Runnable {
  private source: TlsSource | null = null;
  private self: SelfSignedCertificates | null = null;

  constructor(private readonly options: ServingCertificatesOptions) {}

  async start(): Promise<void> {
    const { client, logger, signal } = this.options;
    if (this.options.mode === 'self') {
      const self = new SelfSignedCertificates({
        client,
        logger,
        namespace: this.options.namespace,
        extraHosts: this.options.extraHosts,
      });
      this.self = self;
      this.source = await untilDone('setting up webhook certificates', () => self.start(), logger, signal);
    } else {
      const files = {
        certFile: join(this.options.certDir, 'tls.crt'),
        keyFile: join(this.options.certDir, 'tls.key'),
        logger,
      };
      this.source = await untilDone(
        'reading webhook certificates',
        () => FileTlsSource.open(files),
        logger,
        signal,
      );
    }
  }

  async stop(): Promise<void> {
    await this.self?.stop();
    this.source?.close();
  }

  /** The TLS source; only after start(). */
  get tls(): TlsSource {
    if (!this.source) throw new Error('the serving certificate is not loaded yet');
    return this.source;
  }

  /** The served certificates' CA bundle (self mode), for clients that must trust the webhook. */
  caBundle(): string | null {
    return this.self?.current()?.caCert ?? null;
  }

  /**
   * The secret the peer notices' keys are derived from (webhook/peer.ts PeerKeys): the CA's private key in self mode,
   * which changes only when the CA does (not when a replica reissues the serving certificate, e.g. for a SAN the
   * others lack); the serving key in external mode (the same mounted Secret in every replica). Only after start().
   */
  peerSecret(): string {
    return this.self?.current()?.caKey || this.tls.current().key;
  }

  /** Self mode: reads the certificate Secret again now (another replica may have renewed it); else nothing. */
  async reread(): Promise<void> {
    await this.self?.poll();
  }

  /** When the served certificate expires (null before it is loaded). */
  expiry(): Date | null {
    return this.source ? expiryOf(this.source.current().cert) : null;
  }
}
