import { isJsonObject, JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { MemoryTlsSource } from '../../webhook/tls';
import {
  CertBundle,
  CertTiming,
  DEFAULT_TIMING,
  expiryOf,
  planCertificates,
  serviceHosts,
} from './certificates';
import { Backoff, sleep } from '../../kube/backoff';
import { Informer } from '../../kube/informer';
import { JSON_PATCH, KubeApiError, KubeClient } from '../../kube/kube';
import {
  CERT_SECRET_NAME,
  MUTATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_CONFIGURATION,
  WEBHOOK_SERVICE_NAME,
} from '../../kube/owned';
import { messageOf } from '../../util/errors';
import { metadataOf } from '../../util/meta';

const ROTATED_AT_ANNOTATION = 'modrule.kubemod.io/ca-rotated-at';

export interface SelfSignedOptions {
  client: KubeClient;
  logger: Logger;
  /** The operator's namespace (POD_NAMESPACE): where the Secret and the Service live. */
  namespace: string;
  secretName?: string;
  serviceName?: string;
  /** Extra SANs (e.g. an IP for a webhook reached by URL in e2e runs). */
  extraHosts?: readonly string[];
  webhookConfigurations?: { mutating: string; validating: string };
  /**
   * Watch the two webhook configurations (by name) and put caBundle back within moments when it is wiped, e.g.
   * when a GitOps tool deletes and re-creates them from bundle.yaml; default true.
   */
  watchWebhookConfigurations?: boolean;
  /** How often to check for expiry and caBundle drift; default hourly. */
  checkIntervalMs?: number;
  /** How often to re-read the Secret for certificates another replica renewed; default 30 s. */
  pollIntervalMs?: number;
  timing?: CertTiming;
  now?: () => Date;
}

function b64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

function unb64(v: unknown): string {
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : '';
}

/** The bundle stored in a Secret, or null when it has none. */
export function bundleFromSecret(secret: JsonObject): CertBundle | null {
  const data = isJsonObject(secret.data) ? secret.data : {};
  const bundle: CertBundle = {
    caCert: unb64(data['ca.crt']),
    caKey: unb64(data['ca.key']),
    cert: unb64(data['tls.crt']),
    key: unb64(data['tls.key']),
  };
  const meta = metadataOf(secret);
  const annotations = isJsonObject(meta.annotations) ? meta.annotations : {};
  const rotated = annotations[ROTATED_AT_ANNOTATION];
  if (typeof rotated === 'string') bundle.caRotatedAt = rotated;
  return bundle.caCert && bundle.cert && bundle.key ? bundle : null;
}

function secretData(bundle: CertBundle): JsonObject {
  return {
    'ca.crt': b64(bundle.caCert),
    'ca.key': b64(bundle.caKey),
    'tls.crt': b64(bundle.cert),
    'tls.key': b64(bundle.key),
  };
}

/** True when some webhook of the configuration does not carry `caBundle` (base64) as its CA bundle. */
function lacksCaBundle(config: JsonObject, caBundle: string): boolean {
  const webhooks = Array.isArray(config.webhooks) ? config.webhooks : [];
  return webhooks.some(
    (w) => isJsonObject(w) && !(isJsonObject(w.clientConfig) && w.clientConfig.caBundle === caBundle),
  );
}

/**
 * `--cert-mode self`: the operator keeps its own CA and serving certificate in a Secret. Replicas agree through the
 * API server (create-if-absent, optimistic-concurrency updates), each serves whatever the Secret holds, and the
 * webhook configurations' caBundle follows the Secret's CA bundle.
 */
export class SelfSignedCertificates {
  private readonly secretPath: string;
  private readonly hosts: string[];
  private readonly timing: CertTiming;
  private readonly now: () => Date;
  private tls: MemoryTlsSource | null = null;
  private bundle: CertBundle | null = null;
  private poller: NodeJS.Timeout | null = null;
  private polling = false;
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  private readonly stopping = new AbortController();
  private watchers: Informer[] = [];
  private caSync: Promise<void> | null = null;
  private caSyncAgain = false;

  constructor(private readonly options: SelfSignedOptions) {
    const ns = encodeURIComponent(options.namespace);
    this.secretPath = `/api/v1/namespaces/${ns}/secrets`;
    this.hosts = [
      ...serviceHosts(options.serviceName ?? WEBHOOK_SERVICE_NAME, options.namespace),
      ...(options.extraHosts ?? []),
    ];
    this.timing = options.timing ?? DEFAULT_TIMING;
    this.now = options.now ?? (() => new Date());
  }

  private get secretName(): string {
    return this.options.secretName ?? CERT_SECRET_NAME;
  }

  /** Makes sure a usable bundle is stored (creating or renewing it) and returns it. */
  async ensure(): Promise<CertBundle> {
    const { client, logger } = this.options;
    const path = `${this.secretPath}/${encodeURIComponent(this.secretName)}`;
    for (let attempt = 1; ; attempt++) {
      let secret: JsonObject | null = null;
      try {
        secret = await client.request('GET', path);
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      }
      const current = secret ? bundleFromSecret(secret) : null;
      const plan = planCertificates(current, this.hosts, this.now(), this.timing);
      if (!plan && current) return current;
      if (!plan) throw new Error('no certificate plan');
      const annotations: JsonObject = plan.bundle.caRotatedAt
        ? { [ROTATED_AT_ANNOTATION]: plan.bundle.caRotatedAt }
        : {};
      try {
        if (!secret) {
          await client.request('POST', this.secretPath, {
            body: {
              apiVersion: 'v1',
              kind: 'Secret',
              type: 'kubernetes.io/tls',
              metadata: {
                name: this.secretName,
                namespace: this.options.namespace,
                annotations,
                labels: { 'app.kubernetes.io/managed-by': 'modrule' },
              },
              data: secretData(plan.bundle),
            },
          });
        } else {
          const meta = metadataOf(secret);
          const oldAnnotations = isJsonObject(meta.annotations) ? { ...meta.annotations } : {};
          delete oldAnnotations[ROTATED_AT_ANNOTATION];
          // resourceVersion makes this a compare-and-swap: a replica that renewed first wins, we re-read.
          await client.request('PUT', path, {
            body: {
              ...secret,
              metadata: { ...meta, annotations: { ...oldAnnotations, ...annotations } },
              data: { ...(isJsonObject(secret.data) ? secret.data : {}), ...secretData(plan.bundle) },
            },
          });
        }
        logger.info('webhook certificates stored', {
          secret: this.secretName,
          reason: plan.reason,
          expires: expiryOf(plan.bundle.cert).toISOString(),
        });
        return plan.bundle;
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409 && attempt < 5) {
          logger.info('another replica updated the webhook certificates first; using theirs', {
            secret: this.secretName,
          });
          continue;
        }
        throw err;
      }
    }
  }

  private configurations(): Array<[plural: string, name: string, kind: string]> {
    const names = this.options.webhookConfigurations ?? {
      mutating: MUTATING_WEBHOOK_CONFIGURATION,
      validating: VALIDATING_WEBHOOK_CONFIGURATION,
    };
    return [
      ['mutatingwebhookconfigurations', names.mutating, 'MutatingWebhookConfiguration'],
      ['validatingwebhookconfigurations', names.validating, 'ValidatingWebhookConfiguration'],
    ];
  }

  /** Sets caBundle on every webhook of both configurations that does not already carry the bundle; returns how many. */
  async syncCaBundle(bundle: CertBundle): Promise<number> {
    const { client, logger } = this.options;
    const want = b64(bundle.caCert);
    let patched = 0;
    for (const [plural, name] of this.configurations()) {
      const path = `/apis/admissionregistration.k8s.io/v1/${plural}/${encodeURIComponent(name)}`;
      let config: JsonObject;
      try {
        config = await client.request('GET', path);
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) {
          logger.warn('webhook configuration not found; caBundle not set', { kind: plural, name });
          continue;
        }
        throw err;
      }
      const webhooks = Array.isArray(config.webhooks) ? config.webhooks : [];
      const ops: JsonObject[] = [];
      webhooks.forEach((w, i) => {
        if (!isJsonObject(w)) return;
        const clientConfig = isJsonObject(w.clientConfig) ? w.clientConfig : null;
        if (clientConfig?.caBundle === want) return;
        // The test pins the index to the webhook we looked at, in case someone reorders the list meanwhile.
        ops.push({ op: 'test', path: `/webhooks/${i}/name`, value: w.name ?? null });
        ops.push(
          clientConfig
            ? { op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: want }
            : { op: 'add', path: `/webhooks/${i}/clientConfig`, value: { caBundle: want } },
        );
      });
      if (ops.length === 0) continue;
      await client.request('PATCH', path, { body: ops, contentType: JSON_PATCH });
      patched += ops.length / 2;
      logger.info('webhook caBundle updated', { kind: plural, name, webhooks: ops.length / 2 });
    }
    return patched;
  }

  /**
   * Ensures the certificates, publishes the CA, and keeps both current: polling the Secret swaps the served
   * certificate when any replica renews it, and a periodic check renews before expiry.
   */
  async start(): Promise<MemoryTlsSource> {
    const bundle = await this.ensure();
    this.bundle = bundle;
    this.tls = new MemoryTlsSource({ cert: bundle.cert, key: bundle.key });
    await this.syncCaBundle(bundle).catch((err: Error) =>
      this.options.logger.warn('cannot set webhook caBundle yet; will retry', { error: err.message }),
    );
    // Polling needs only `get` on the one Secret (a watch needs list/watch), and a renewal happens weeks before
    // expiry, so seconds of delay before the other replicas swap do not matter.
    this.poller = setInterval(() => void this.poll(), this.options.pollIntervalMs ?? 30_000);
    this.poller.unref();
    this.timer = setInterval(() => void this.check(), this.options.checkIntervalMs ?? 60 * 60 * 1000);
    this.timer.unref();
    if (this.options.watchWebhookConfigurations !== false) this.watchConfigurations();
    return this.tls;
  }

  /**
   * One informer per configuration, narrowed by `fieldSelector=metadata.name=...` (which RBAC authorises with
   * resourceNames): any version of it lacking our CA bundle, including a re-created one, triggers a sync.
   */
  private watchConfigurations(): void {
    const { client, logger } = this.options;
    const check = (config: JsonObject) => {
      if (this.bundle && lacksCaBundle(config, b64(this.bundle.caCert))) this.requestCaSync();
    };
    for (const [plural, name, kind] of this.configurations()) {
      const informer = new Informer({
        client,
        logger,
        path: `/apis/admissionregistration.k8s.io/v1/${plural}`,
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind,
        fieldSelector: `metadata.name=${name}`,
        handlers: { replace: (items) => items.forEach(check), upsert: check, remove: () => undefined },
      });
      informer.start();
      this.watchers.push(informer);
    }
  }

  /** Runs syncCaBundle, once more if asked again meanwhile, retrying failures with backoff until it succeeds. */
  private requestCaSync(): void {
    if (this.caSync) {
      this.caSyncAgain = true;
      return;
    }
    const signal = this.stopping.signal;
    this.caSync = (async () => {
      const backoff = new Backoff();
      do {
        this.caSyncAgain = false;
        const bundle = this.bundle;
        if (!bundle) break;
        try {
          await this.syncCaBundle(bundle);
        } catch (err) {
          this.options.logger.warn('cannot restore webhook caBundle; will retry', {
            error: messageOf(err),
          });
          this.caSyncAgain = true;
          await sleep(backoff.next(), signal);
        }
      } while (this.caSyncAgain && !signal.aborted);
      this.caSync = null;
    })();
  }

  /** The certificates currently served. */
  current(): CertBundle | null {
    return this.bundle;
  }

  /** One renewal round: ensure the Secret, swap in what it holds, fix caBundle drift. */
  check(): Promise<void> {
    this.checking ??= (async () => {
      try {
        const bundle = await this.ensure();
        this.use(bundle);
        await this.syncCaBundle(bundle);
      } catch (err) {
        this.options.logger.error('certificate check failed; will retry', { error: messageOf(err) });
      } finally {
        this.checking = null;
      }
    })();
    return this.checking;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.poller) clearInterval(this.poller);
    this.stopping.abort();
    await Promise.all([this.checking, this.caSync, ...this.watchers.map((w) => w.stop())]);
  }

  /** Re-reads the Secret and serves what it holds; recreates it when it was deleted. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const path = `${this.secretPath}/${encodeURIComponent(this.secretName)}`;
      this.adopt(await this.options.client.request('GET', path));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) await this.check();
      else this.options.logger.debug('cannot read the certificate Secret', { error: messageOf(err) });
    } finally {
      this.polling = false;
    }
  }

  private adopt(secret: JsonObject): void {
    const bundle = bundleFromSecret(secret);
    if (!bundle) return;
    if (this.use(bundle)) {
      void this.syncCaBundle(bundle).catch((err: Error) =>
        this.options.logger.warn('cannot update webhook caBundle; will retry', { error: err.message }),
      );
    }
  }

  private use(bundle: CertBundle): boolean {
    const old = this.bundle;
    if (old && old.cert === bundle.cert && old.key === bundle.key && old.caCert === bundle.caCert)
      return false;
    try {
      this.tls?.set({ cert: bundle.cert, key: bundle.key });
    } catch (err) {
      this.options.logger.error('certificate in the Secret is unusable; keeping the current one', {
        error: messageOf(err),
      });
      return false;
    }
    this.bundle = bundle;
    this.options.logger.info('serving certificate swapped', { expires: expiryOf(bundle.cert).toISOString() });
    return true;
  }
}
