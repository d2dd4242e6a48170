import { combineHandlers } from '../kube/informer';
import { OperatorConfig, OperatorDeps } from './config';
import { Runnable, runnable } from './controller/lifecycle';
import { OperatorMetrics } from './metrics';
import { NativeController } from './native/controller';
import { ReferenceCaches } from './references/caches';
import { watchReferences } from './references/metrics';
import { ReferenceStatus } from './references/status-feed';
import { Discovery } from './rules/discovery';
import { ClusterSync } from './rules/sync';
import { ScopeController } from './scope/controller';
import { ApiServerTargets } from './scope/apiservers';
import { createKubeClient } from '../kube/kube';
import { accessVia } from '../kube/access';
import { OUTSIDE_NET, ScopeFinding, UNKNOWN_KIND } from './scope/findings';
import { ReadyGate } from './scope/ready-gate';
import { ScopeStatus } from './scope/status';
import { OperatorState } from './state';
import { ConflictStatus } from './status/conflicts';
import { FailingStatus } from './status/failing';
import { QuarantineStatus } from './status/quarantine';
import { PodControllersFacet } from './status/pod-controllers';
import { StatusReporter } from './status/reporter';
import { UnenforcedStatus } from './status/unenforced';

/** The operator's controllers, built on the shared state, each with plain references to what it reads. */
export interface Controllers {
  readonly status: StatusReporter | null;
  readonly sync: ClusterSync;
  readonly native: NativeController | null;
  readonly discovery: Discovery;
  readonly scope: ScopeController;
  readonly references: ReferenceCaches;
  readonly metrics: OperatorMetrics;
  /** In the order they start (each reads what those before it set up); stopped in reverse. */
  readonly parts: ReadonlyArray<readonly [string, Runnable]>;
}

/**
 * Builds the controllers in dependency order: the status writer and what reports through it (the Ready gate holds a
 * valid rule's Ready until the live scope sends its objects), the native controller, the ModRule/Namespace/Node sync
 * that feeds the store and tells the others, discovery and the scope controller, and the reference caches.
 */
export function buildControllers(
  config: OperatorConfig,
  deps: OperatorDeps,
  state: OperatorState,
): Controllers {
  const { client, logger } = deps;
  const { store, registry, live } = state;
  const metrics = new OperatorMetrics(registry);
  const {
    status,
    scopeStatus,
    gate,
    findings,
    podControllers,
    parts: statusParts,
  } = buildStatus(config, deps, state, metrics);
  const access = deps.access;
  const apiServers = access
    ? new ApiServerTargets({ client, logger, clientFor: (url) => createKubeClient(accessVia(access, url)) })
    : undefined;
  const mode = config.nativePolicies ?? 'opt-in';
  const native =
    mode === 'off'
      ? null
      : new NativeController({
          ...{ client, store, status, logger, mode, registry },
          sink: gate ?? undefined, // Ready reports go through the gate, as ClusterSync's do
          clusterNamespace: config.clusterNamespace,
          podNamespace: config.podNamespace,
          settleMs: config.nativeSettleMs,
          net: (rule) => state.nativeScopes.of(rule),
          // An edit admitted (here or by a peer) holds the rule's binding back until it lands or fails.
          edits: state.admitted,
          apiServers: () => apiServers?.targets() ?? [],
        });
  if (native) state.nativeScopes.onChange(() => native.netChanged());
  const sync = new ClusterSync({
    ...{ client, store, logger },
    status: gate,
    observer: combineHandlers(native, state.admitted.handlers()),
  });
  metrics.watchInformers(sync);
  const discovery = new Discovery({ client, logger });
  // Scopes from discovery: a rule whose references' scope it changes (a CRD came, went or changed) is compiled again.
  state.kindScopes.follow(discovery);
  discovery.onChange(() => sync.rescope());
  const scope = new ScopeController({
    ...{ client, logger, registry, discovery, live },
    mode: config.dragnetScope ?? 'rules',
    clusterNamespace: config.clusterNamespace,
    probeNamespace: config.podNamespace,
    rules: () => [...store.allRules(), ...state.admitted.rules()],
    rulesVersion: () => sync.rulesVersion(),
    rulesReady: () => sync.isReady(),
    onRulesChange: (listener) => store.onChange(listener),
    admitted: state.admitted,
    apiServers,
    native,
    nativeScopes: state.nativeScopes,
    onScope: (reports, narrowed) => {
      for (const finding of findings) finding.update(reports, narrowed);
      podControllers.update(reports);
      scopeStatus.setRules(reports.map((r) => r.rule));
    },
  });
  const references = new ReferenceCaches({
    client,
    logger,
    store,
    ownerKinds: config.references?.ownerKinds,
  });
  const referenceStatus = new ReferenceStatus(store, references, status);
  watchReferences(registry, references);

  const parts: Array<readonly [string, Runnable]> = [
    ...statusParts,
    ['reference status', stopOnly(() => referenceStatus.stop())],
    ['native policies', nativePart(native, deps)],
    ['rule sync', sync],
    ['reference caches', references],
    ['discovery', discovery],
    ['dragnet scope', scope],
  ];
  return { status, sync, native, discovery, scope, references, metrics, parts };
}

/**
 * The status writer and what reports through it: the Ready gate (a valid rule's Ready waits until the live scope
 * sends its objects), the scope's own word (held at the configured net, not in force yet), quarantined and failing
 * rules, what Warn/DryRun rules would have done (NotEnforced), rules in conflict (Conflicting, checked in slices
 * after rule changes), and the scope's findings (kinds not served or outside the configured net).
 */
function buildStatus(
  config: OperatorConfig,
  deps: OperatorDeps,
  state: OperatorState,
  metrics: OperatorMetrics,
) {
  const { client, logger } = deps;
  const { live, registry } = state;
  const status =
    config.writeStatus === false
      ? null
      : new StatusReporter({ client, logger, onWrite: (result) => metrics.statusWrites.inc({ result }) });
  const scopeStatus = new ScopeStatus(status, live);
  const gate = status
    ? new ReadyGate(status, live, state.confirmed, { status: scopeStatus, why: () => live.whyNotSent() })
    : null;
  const degraded = status ? new QuarantineStatus({ quarantine: state.quarantine, store: state.store }) : null;
  const failing = new FailingStatus({ failures: state.failures, status, registry });
  const notEnforced = new UnenforcedStatus({ unenforced: state.unenforced, status, registry });
  const conflicts = new ConflictStatus({
    store: state.store,
    status,
    registry,
    clusterNamespace: config.clusterNamespace,
    logger,
  });
  const findings = [UNKNOWN_KIND, OUTSIDE_NET].map((f) => new ScopeFinding(f, status, registry));
  // status.podControllers: the controllers whose writes the registration sends for a Pod rule's variants.
  const podControllers = new PodControllersFacet(status);
  const parts: Array<readonly [string, Runnable]> = [
    [
      'status',
      runnable(
        () => undefined,
        () => status?.stop(),
      ),
    ],
    ['scope status', scopeStatus],
    [
      'ready gate',
      runnable(
        () => undefined,
        () => gate?.stop(),
      ),
    ],
    [
      'quarantine status',
      runnable(
        () => void (status && degraded?.attach(status)),
        () => degraded?.stop(),
      ),
    ],
    ['failing status', failing],
    ['not-enforced status', notEnforced],
    ['conflict status', conflicts],
  ];
  return { status, scopeStatus, gate, findings, podControllers, parts };
}

/** A part that only needs stopping (it works from the moment it is built). */
function stopOnly(stop: () => void | Promise<void>): Runnable {
  return runnable(() => undefined, stop);
}

/** The native controller's part: its start looks at the cluster in the background (the rest does not wait). */
function nativePart(native: NativeController | null, deps: OperatorDeps): Runnable {
  return runnable(
    () =>
      void native
        ?.start()
        .catch((err: Error) => deps.logger.error('native policies failed to start', { error: err.message })),
    () => native?.stop(),
  );
}
