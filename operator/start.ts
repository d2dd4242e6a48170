import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import type { ScopeMode } from '../scope/ownership';
import { Logger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { BudgetLimits } from '../util/budget';
import { RunningWebhook, startWebhookServer } from '../webhook/server';
import { QuarantineOptions, RuleQuarantine } from '../webhook/quarantine';
import { RuleFailures, RuleFailuresOptions } from '../webhook/rule-failures';
import { RuleUnenforced } from '../webhook/rule-unenforced';
import { FileTlsSource, TlsSource } from '../webhook/tls';
import { BackgroundAudit, BackgroundAuditConfig, DEFAULT_INTERVAL_SECONDS } from './audit/background';
import { AuditMetrics } from './audit/metrics';
import { AdmittedRules } from './rules/admitted';
import { Backoff, sleep } from '../kube/backoff';
import { expiryOf } from './certs/certificates';
import { FailingStatus } from './status/failing';
import { UnenforcedStatus } from './status/unenforced';
import { ConflictStatus } from './status/conflicts';
import { combineHandlers } from '../kube/informer';
import { KubeClient } from '../kube/kube';
import { OperatorMetrics } from './metrics';
import { PeerNotifier } from './admission/peers';
import { createPodBindingHandler } from './rules/podbinding';
import { startDragnetScope } from './scope/wiring';
import { SelfSignedCertificates } from './certs/self-signed';
import { NativeController, NativeMode } from './native/controller';
import { QuarantineStatus } from './status/quarantine';
import { createRuleAdmission } from './admission/rule-admission';
import { StatusReporter } from './status/reporter';
import { ClusterSync } from './rules/sync';
import { ReferenceCaches } from './references/caches';
import { watchReferences } from './references/metrics';
import { ReferenceStatus } from './references/status-feed';
import { messageOf } from '../util/errors';

export type CertMode = 'self' | 'external';

/** How the operator runs (flags and environment of `modrule operator`). */
export interface OperatorConfig {
  /** Namespace whose ModRules are cluster-wide. */
  clusterNamespace: string;
  /** The operator's own namespace (POD_NAMESPACE): the certificate Secret and the webhook Service live there. */
  podNamespace: string;
  webhookPort: number;
  healthPort: number;
  /** Interface to listen on; default all. */
  host?: string;
  certMode: CertMode;
  /** external mode: folder with tls.crt and tls.key (cert-manager's mounted Secret). */
  certDir: string;
  /** Work and time one dragnet request may use; default DEFAULT_BUDGET. */
  budget?: BudgetLimits;
  /** self mode: extra SANs for the serving certificate (a webhook reached by URL, e.g. in e2e runs). */
  extraHosts?: string[];
  /** Write Ready conditions and events to ModRules; default true. */
  writeStatus?: boolean;
  /** ModRules served by the API server as admission policies where they fit (issue 19); default 'opt-in'. */
  nativePolicies?: NativeMode;
  /** How long an accepted policy runs alongside the webhook before the webhook leaves the rule to it. */
  nativeSettleMs?: number;
  /** `rules` (default): the dragnet's registration follows the ModRules in force; `wide`: it stays as configured. */
  dragnetScope?: ScopeMode;
  /**
   * On stop, how long to keep serving while reporting unready, so the API server stops routing to this replica
   * before it closes (endpoint removal is asynchronous); default 0.
   */
  shutdownDelayMs?: number;
  /** When a rule that keeps running out of its share of the budget is quarantined (tests shorten it). */
  quarantine?: QuarantineOptions;
  /** The window run-time failures and Warn/DryRun outcomes are counted over on a rule's status (tests shorten it). */
  failures?: RuleFailuresOptions;
  /** Background audit reports (--reports); off when absent. */
  reports?: BackgroundAuditConfig;
  /** Keep the record of the rules that patched an object on it (--record-patched-by); default off. */
  recordPatchedBy?: boolean;
  /** Objects rules read (docs/references.md): Secrets allowed (--allow-secret-references), owner kinds read. */
  references?: { allowSecrets?: boolean; ownerKinds?: readonly string[] };
  /** This replica's pod IP (POD_IP): left out of the peers it tells of the rules it admits. */
  podIp?: string;
  /** The peer replicas' webhook base URLs; default: the webhook Service's ready endpoints. */
  peers?: string[];
}

/** A running operator. */
export interface RunningOperator {
  readonly store: RuleStore;
  /** The native policy controller, unless nativePolicies is 'off'. */
  readonly native: NativeController | null;
  readonly webhook: RunningWebhook;
  /** The served certificates' CA bundle (self mode), for clients that must trust the webhook. */
  caBundle(): string | null;
  isReady(): boolean;
  /** Stops accepting requests, lets in-flight ones finish, stops the informers and timers. */
  stop(): Promise<void>;
}

export interface OperatorDeps {
  client: KubeClient;
  logger: Logger;
  registry?: Registry;
  /** Cancels a start-up that is still waiting for the API server. */
  signal?: AbortSignal;
}

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
 * Wires the operator: rule store <- informers (ModRules, Namespaces, Nodes) with status write-back, certificates
 * (self-managed or mounted), and the webhook server, which stays unready until the first lists are in.
 */
export async function startOperator(config: OperatorConfig, deps: OperatorDeps): Promise<RunningOperator> {
  const { client, logger, signal } = deps;
  const store = new RuleStore({
    clusterNamespace: config.clusterNamespace,
    keepSource: false,
    references: { allowSecrets: config.references?.allowSecrets },
  });
  const registry = deps.registry ?? new Registry();
  // The metrics read these at scrape time, after they are set.
  let tls: TlsSource | null = null;
  const metrics = new OperatorMetrics(registry, {
    informers: () => rules.informerStates(),
    certificateExpiry: () => (tls ? expiryOf(tls.current().cert) : null),
  });
  // Rules that keep running out of their share are quarantined (per replica) and shown Degraded on the ModRule.
  const quarantine = new RuleQuarantine(config.quarantine, store);
  const status =
    config.writeStatus === false
      ? null
      : new StatusReporter({ client, logger, onWrite: (result) => metrics.statusWrites.inc({ result }) });
  const degraded = status ? new QuarantineStatus({ quarantine, store }) : null;
  // Rules that fail at run time show it on the ModRule (Failing), per replica.
  const failures = new RuleFailures(config.failures, store);
  const failing = new FailingStatus({ failures, status, registry });
  // What Warn/DryRun rules would have done shows on the ModRule (NotEnforced), per replica, over the same window.
  const unenforced = new RuleUnenforced(config.failures, store);
  const notEnforced = new UnenforcedStatus({ unenforced, status, registry });
  // Rules in conflict with each other show it on both (Conflicting), checked in slices after rule changes.
  const conflicts = new ConflictStatus({
    store,
    status,
    registry,
    clusterNamespace: config.clusterNamespace,
  });
  // What the rules read besides their object; the ReferenceMissing condition says what is not found.
  const references = new ReferenceCaches({
    client,
    logger,
    store,
    ownerKinds: config.references?.ownerKinds,
    onStatusChange: () => referenceStatus.refresh(),
  });
  const referenceStatus = new ReferenceStatus(store, references, status);
  watchReferences(registry, references);
  // Rules admitted by this replica that the store has not seen yet: the dragnet waits for them, the scope counts them.
  const admitted = new AdmittedRules({ client, logger, registry, clusterNamespace: config.clusterNamespace });
  // Ready is reported once the dragnet registration sends a rule's objects (operator/scope/wiring.ts).
  const scope = startDragnetScope({
    mode: config.dragnetScope ?? 'rules',
    clusterNamespace: config.clusterNamespace,
    podNamespace: config.podNamespace,
    ...{ client, logger, registry, store, admitted, status, sync: () => rules, native: () => native },
  });
  const mode = config.nativePolicies ?? 'opt-in';
  const native =
    mode === 'off'
      ? null
      : new NativeController({
          client,
          store,
          status,
          // Ready reports go through the scope's gate, as ClusterSync's do.
          sink: scope.status,
          logger,
          mode,
          clusterNamespace: config.clusterNamespace,
          podNamespace: config.podNamespace,
          settleMs: config.nativeSettleMs,
          net: (rule) => scope.scope.nativeScopes.of(rule),
          registry,
        });
  if (native) scope.scope.nativeScopes.onChange(() => native.netChanged());
  const rules = new ClusterSync({
    client,
    store,
    logger,
    status: scope.status,
    observer: combineHandlers(native, admitted.handlers()),
  });
  if (status) degraded?.attach(status);
  failing.start();
  notEnforced.start();
  conflicts.start();
  let certs: SelfSignedCertificates | null = null;
  /** Stops everything that watches or writes besides the webhook server (every exit path stops the same set). */
  const stopWatchers = async (): Promise<void> => {
    degraded?.stop();
    quarantine.close();
    admitted.stop();
    failing.stop();
    failures.close();
    notEnforced.stop();
    unenforced.close();
    conflicts.stop();
    referenceStatus.stop();
    await Promise.all([
      rules.stop(),
      status?.stop(),
      certs?.stop(),
      scope.stop(),
      native?.stop(),
      references.stop(),
    ]);
  };
  let draining = false;
  rules.start();
  references.start();
  void native
    ?.start()
    .catch((err: Error) => logger.error('native policies failed to start', { error: err.message }));
  void rules.synced.then(() => logger.info('initial ModRules, Namespaces and Nodes loaded; ready'));

  let served: TlsSource;
  try {
    if (config.certMode === 'self') {
      const self = new SelfSignedCertificates({
        client,
        logger,
        namespace: config.podNamespace,
        extraHosts: config.extraHosts,
      });
      certs = self;
      served = await untilDone('setting up webhook certificates', () => self.start(), logger, signal);
    } else {
      const options = {
        certFile: join(config.certDir, 'tls.crt'),
        keyFile: join(config.certDir, 'tls.key'),
        logger,
      };
      served = await untilDone(
        'reading webhook certificates',
        () => FileTlsSource.open(options),
        logger,
        signal,
      );
    }
  } catch (err) {
    await stopWatchers();
    throw err;
  }
  tls = served;
  const podBinding = createPodBindingHandler({ client, logger });
  // Replicas tell each other of the rules they admit, signed with a key derived from the shared serving key.
  const peerKey = () => createHash('sha256').update(served.current().key).digest('hex');
  const peers = new PeerNotifier({
    client,
    logger,
    registry,
    namespace: config.podNamespace,
    port: config.webhookPort,
    selfIp: config.podIp,
    peers: config.peers,
    key: peerKey,
  });
  peers.start();

  let webhook: RunningWebhook;
  try {
    webhook = await startWebhookServer({
      store,
      tls: served,
      port: config.webhookPort,
      host: config.host,
      healthPort: config.healthPort,
      logger,
      registry,
      processMetrics: true,
      budget: config.budget,
      isReady: () => !draining && rules.isReady(),
      rulesLoaded: rules.synced,
      onPodBinding: async (binding) => metrics.podBindings.inc({ result: await podBinding(binding) }),
      // A valid ModRule is admitted once the registration sends its objects; the dragnet waits for the store to have it.
      ruleAdmission: createRuleAdmission({
        store,
        admitted,
        scope: scope.scope,
        confirmed: scope.confirmed,
        peers,
        logger,
        registry,
      }),
      storeFreshness: admitted,
      // A peer's rule counts here too: held for until stored, and in this replica's computations of the registration.
      peer: {
        key: peerKey,
        receive: (notice) =>
          admitted.admit(notice, notice.rule ? (store.compileRule(notice.rule).rule ?? null) : null),
      },
      // A demoted namespace's own rules get a Warning Event, so its tenant sees why (kubectl describe modrule).
      onDemotion: status ? (demotion) => status.reportDemotion(demotion) : undefined,
      quarantine,
      failures,
      unenforced,
      // ModRules naming kinds the cluster does not serve are admitted with a warning.
      servedKinds: scope.catalog,
      recordPatchedBy: config.recordPatchedBy,
      references,
    });
  } catch (err) {
    await Promise.all([stopWatchers(), peers.stop()]);
    served.close();
    throw err;
  }
  // Opt-in: audits existing objects and writes reports, on the webhook's event loop but in small slices.
  const auditMetrics = config.reports
    ? new AuditMetrics(registry, config.reports.intervalSeconds ?? DEFAULT_INTERVAL_SECONDS)
    : null;
  const audit = config.reports
    ? new BackgroundAudit(config.reports, {
        ...{ client, store, logger, rulesLoaded: rules.synced },
        onRound: (round) => auditMetrics?.round(round),
        onFailure: (_err, ms) => auditMetrics?.failed(ms),
        quarantined: () => quarantine.gate(),
        references,
      })
    : null;
  audit?.start();
  logger.info('webhook listening', {
    url: webhook.url,
    health: webhook.healthUrl,
    certMode: config.certMode,
  });

  let stopping: Promise<void> | null = null;
  return {
    store,
    native,
    webhook,
    caBundle: () => certs?.current()?.caCert ?? null,
    isReady: () => !draining && rules.isReady(),
    stop: () => {
      stopping ??= (async () => {
        draining = true;
        if (config.shutdownDelayMs) await sleep(config.shutdownDelayMs);
        await webhook.close();
        await Promise.all([stopWatchers(), audit?.stop(), peers.stop()]);
        served.close();
        logger.info('operator stopped');
      })();
      return stopping;
    },
  };
}
