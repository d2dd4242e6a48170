import { RunningWebhook, startWebhookServer } from '../webhook/server';
import { BackgroundAudit } from './audit/background';
import { AuditMetrics } from './audit/metrics';
import { DEFAULT_INTERVAL_SECONDS } from './audit/background';
import { createRuleAdmission } from './admission/rule-admission';
import { createPeers, receivePeerNotice } from './admission/peers';
import { ServingCertificates } from './certs/serving';
import { OperatorConfig, OperatorDeps } from './config';
import { Runnable, runnable } from './controller/lifecycle';
import { Controllers } from './controllers';
import { createPodBindingHandler } from './rules/podbinding';
import { OperatorState } from './state';

/** What the operator serves: the certificate, the peer notices, the webhook server and the background audit. */
export interface Serving {
  readonly certificates: ServingCertificates;
  /** The webhook server; only once its part started. */
  webhook(): RunningWebhook;
  /** In the order they start, after the controllers; stopped in reverse. */
  readonly parts: ReadonlyArray<readonly [string, Runnable]>;
}

/**
 * Builds the serving side on the shared state and the controllers: the certificate first (the webhook and the peer
 * notices use its key), then the peers, the webhook server (unready until the first lists are in, and while
 * `draining`), and the opt-in background audit.
 */
export function buildServing(
  config: OperatorConfig,
  deps: OperatorDeps,
  state: OperatorState,
  controllers: Controllers,
  draining: () => boolean,
): Serving {
  const { client, logger } = deps;
  const { store, registry, admitted } = state;
  const { sync, scope, references, metrics } = controllers;
  const certificates = new ServingCertificates({
    ...{ client, logger, signal: deps.signal },
    mode: config.certMode,
    namespace: config.podNamespace,
    certDir: config.certDir,
    extraHosts: config.extraHosts,
  });
  metrics.watchCertificate(() => certificates.expiry());
  // Replicas tell each other of the rules they admit, signed with keys both derive from the certificates.
  const { notifier: peers, keys: peerKeys } = createPeers(
    {
      ...{ client, logger, registry, namespace: config.podNamespace, port: config.webhookPort },
      ...{ selfIp: config.podIp, peers: config.peers },
    },
    certificates,
  );
  const podBinding = createPodBindingHandler({ client, logger });
  // A valid ModRule is admitted once the registration sends its objects; the dragnet waits for the store to have it.
  // A rule served natively is taken back to the webhook before an edit of it is answered.
  const ruleAdmission = createRuleAdmission({
    ...{ store, admitted, scope, peers, logger, registry },
    native: controllers.native ?? undefined,
    confirmed: state.confirmed,
  });
  let webhook: RunningWebhook | null = null;
  const server = runnable(
    async () => {
      webhook = await startWebhookServer(
        {
          ...{ logger, registry },
          tls: certificates.tls,
          port: config.webhookPort,
          host: config.host,
          healthPort: config.healthPort,
          processMetrics: true,
          isReady: () => !draining() && sync.isReady(),
        },
        {
          ...{ store, references, ruleAdmission },
          budget: config.budget,
          rulesLoaded: sync.synced,
          onPodBinding: async (binding) => metrics.podBindings.inc({ result: await podBinding(binding) }),
          storeFreshness: admitted,
          // A peer's rule counts here too: held for until stored, and in this replica's computations of the scope.
          peer: {
            ...peerKeys,
            receive: (notice) => receivePeerNotice(admitted, store, notice),
          },
          // A demoted namespace's own rules get a Warning Event, so its tenant sees why (kubectl describe modrule).
          onDemotion: controllers.status ? (d) => controllers.status?.reportDemotion(d) : undefined,
          quarantine: state.quarantine,
          failures: state.failures,
          unenforced: state.unenforced,
          // ModRules naming kinds the cluster does not serve are admitted with a warning.
          servedKinds: () => controllers.discovery.catalog(),
          recordPatchedBy: config.recordPatchedBy,
        },
      );
      logger.info('webhook listening', {
        url: webhook.url,
        health: webhook.healthUrl,
        certMode: config.certMode,
      });
    },
    () => webhook?.close(),
  );
  const parts: Array<readonly [string, Runnable]> = [
    ['certificates', certificates],
    ['peers', peers],
    ['webhook server', server],
  ];
  // Opt-in: audits existing objects and writes reports, on the webhook's event loop but in small slices.
  if (config.reports) {
    const auditMetrics = new AuditMetrics(
      registry,
      config.reports.intervalSeconds ?? DEFAULT_INTERVAL_SECONDS,
    );
    const audit = new BackgroundAudit(config.reports, {
      ...{ client, store, logger, references },
      rulesLoaded: sync.synced,
      onRound: (round) => auditMetrics.round(round),
      onFailure: (_err, ms) => auditMetrics.failed(ms),
      quarantined: () => state.quarantine.gate(),
    });
    parts.push(['background audit', audit]);
  }
  return {
    certificates,
    webhook: () => {
      if (!webhook) throw new Error('the webhook server is not started');
      return webhook;
    },
    parts,
  };
}
