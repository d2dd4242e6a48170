import { Registry } from 'prom-client';
import { RuleStore } from '../store/rules';
import { RuleQuarantine } from '../webhook/quarantine';
import { KindScopes } from './rules/kind-scopes';
import { RuleFailures } from '../webhook/rule-failures';
import { RuleUnenforced } from '../webhook/rule-unenforced';
import { OperatorConfig, OperatorDeps } from './config';
import { Runnable, runnable } from './controller/lifecycle';
import { AdmittedRules } from './rules/admitted';
import { LiveScopeView } from './scope/live';
import { NativeScopes } from './scope/native-scopes';
import { ConfirmedRules } from './scope/ready-gate';

/**
 * What the operator's parts share, built before any of them (no I/O): the rule store the informers feed and the
 * webhook reads, the rules admitted and not stored yet, this replica's view of the live dragnet scope, what it does
 * for native rules, the rules confirmed in force at admission, and the per-replica records of quarantined and
 * failing rules and of what Warn/DryRun rules would have done. Every controller is built with plain references to these.
 */
export interface OperatorState {
  readonly store: RuleStore;
  readonly registry: Registry;
  /** Rules admitted by this replica (or a peer) that the store has not seen yet. */
  readonly admitted: AdmittedRules;
  /** The live dragnet scope as this replica knows it (written by the scope controller, read by the Ready gate). */
  readonly live: LiveScopeView;
  /** What the live scope does for each native rule (written by the scope controller, read by the native one). */
  readonly nativeScopes: NativeScopes;
  /** Rule versions confirmed in force when admitted: Ready as soon as the store has them. */
  readonly confirmed: ConfirmedRules;
  /** Rules that keep running out of their share of the budget, set aside (per replica). */
  /** Which kinds are cluster-scoped (the store compiles references with it; discovery feeds it). */
  readonly kindScopes: KindScopes;
  readonly quarantine: RuleQuarantine;
  /** Rules' run-time failures in the recent window (per replica). */
  readonly failures: RuleFailures;
  /** What Warn/DryRun rules would have patched or rejected in the recent window (per replica). */
  readonly unenforced: RuleUnenforced;
}

/** Builds the shared state; `stop` releases its timers. */
export function buildState(
  config: OperatorConfig,
  deps: OperatorDeps,
): OperatorState & { stopper: Runnable } {
  const { client, logger } = deps;
  const kindScopes = new KindScopes();
  const store = new RuleStore({
    clusterNamespace: config.clusterNamespace,
    keepSource: false,
    references: { allowSecrets: config.references?.allowSecrets, clusterScoped: kindScopes.clusterScoped },
  });
  const registry = deps.registry ?? new Registry();
  const admitted = new AdmittedRules({ client, logger, registry, clusterNamespace: config.clusterNamespace });
  const live = new LiveScopeView({ mode: config.dragnetScope ?? 'rules' });
  const quarantine = new RuleQuarantine(config.quarantine, store);
  const failures = new RuleFailures(config.failures, store);
  const unenforced = new RuleUnenforced(config.failures, store);
  const state = {
    store,
    kindScopes,
    registry,
    admitted,
    live,
    nativeScopes: new NativeScopes(),
    confirmed: new ConfirmedRules(),
    quarantine,
    failures,
    unenforced,
  };
  const stopper = runnable(
    () => undefined,
    () => {
      admitted.stop();
      live.stop();
      quarantine.close();
      failures.close();
      unenforced.close();
    },
  );
  return { ...state, stopper };
}
