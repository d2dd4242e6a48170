import { Registry } from 'prom-client';
import { Logger } from '../../util/logger';
import { RuleStore } from '../../store/rules';
import { ResourceCatalog } from '../../scope/catalog';
import { Discovery } from '../rules/discovery';
import { ScopeController } from './controller';
import { KubeClient } from '../../kube/kube';
import { AdmittedRules } from '../rules/admitted';
import type { NativeController } from '../native/controller';
import { ConfirmedRules, ReadyGate } from './ready-gate';
import { ScopeStatus } from './status';
import type { ScopeMode } from '../../scope/ownership';
import { StatusReporter } from '../status/reporter';
import { ClusterSync } from '../rules/sync';
import { StatusSink } from '../status/reporter';
import { OUTSIDE_NET, ScopeFinding, UNKNOWN_KIND } from './findings';
import { PodControllersFacet } from '../status/pod-controllers';

/** The dragnet scope as the operator runs it: discovery, the registration writer, the Ready gate. */
export interface RunningScope {
  /** Where ClusterSync reports rule verdicts: Ready waits for the registration. */
  readonly status: StatusSink | null;
  readonly scope: ScopeController;
  /** Rules confirmed in force at admission (Ready as soon as stored). */
  readonly confirmed: ConfirmedRules;
  /** What discovery serves now (null until loaded): the ModRule admission's warnings for kinds not served. */
  catalog(): ResourceCatalog | null;
  stop(): Promise<void>;
}

/**
 * Starts discovery and the dragnet scope, fed from the rule store (`sync` is read later: it is created with the
 * returned status sink).
 */
export function startDragnetScope(deps: {
  mode: ScopeMode;
  clusterNamespace: string;
  client: KubeClient;
  logger: Logger;
  registry: Registry;
  store: RuleStore;
  /** Rules admitted and not stored yet: the scope counts them in force. */
  admitted: AdmittedRules;
  /** The operator's own namespace (registration probes). */
  podNamespace: string;
  status: StatusReporter | null;
  sync: () => ClusterSync;
  /** The native policy controller, if any (read later: it is created with the returned scope). */
  native?: () => NativeController | null;
}): RunningScope {
  const { client, logger, registry, store, admitted } = deps;
  const discovery = new Discovery({ client, logger });
  // Rules naming kinds not served, or kinds the configured net leaves out, say so on their status (UnknownKind,
  // OutsideNet), from the scope's own per-rule reports.
  const findings = [UNKNOWN_KIND, OUTSIDE_NET].map((f) => new ScopeFinding(f, deps.status, registry));
  // status.podControllers: the controllers whose writes the registration sends for a Pod rule's variants.
  const podControllers = new PodControllersFacet(deps.status);
  const scope = new ScopeController({
    client,
    logger,
    mode: deps.mode,
    clusterNamespace: deps.clusterNamespace,
    rules: () => [...store.allRules(), ...admitted.rules()],
    rulesVersion: () => deps.sync().rulesVersion(),
    rulesReady: () => deps.sync().isReady(),
    onRulesChange: (listener) => store.onChange(listener),
    discovery,
    registry,
    native: {
      policiesVersion: () => deps.native?.()?.policiesVersion() ?? null,
      servingVersion: () => deps.native?.()?.servingVersion() ?? '',
    },
    admitted,
    probeNamespace: deps.podNamespace,
    onScope: (reports, narrowed) => {
      for (const finding of findings) finding.update(reports, narrowed);
      podControllers.update(reports);
      registration.setRules(reports.map((r) => r.rule));
    },
  });
  // The registration's own word on the rules: held at the configured net (WideFallback), or not in force yet.
  const registration = new ScopeStatus(deps.status, scope);
  const confirmed = new ConfirmedRules();
  const gate = deps.status
    ? new ReadyGate(deps.status, scope, confirmed, { status: registration, why: () => scope.whyNotSent() })
    : null;
  discovery.start();
  scope.start();
  return {
    status: gate,
    scope,
    confirmed,
    catalog: () => discovery.catalog(),
    stop: async () => {
      gate?.stop();
      registration.stop();
      await Promise.all([scope.stop(), discovery.stop()]);
    },
  };
}
