import { Registry } from 'prom-client';
import { Logger } from '../../util/logger';
import { CompiledRule } from '../../rule/compile';
import { RuleScopeReport } from '../../scope/compute';
import { ScopeMode } from '../../scope/ownership';
import { KubeClient } from '../../kube/kube';
import { AdmittedRules } from '../rules/admitted';
import type { CatalogSource } from '../rules/discovery';
import { LiveScopeView } from './live';
import { ApiServerTargets } from './apiservers';
import { NativeScopes } from './native-scopes';

/** What the scope controller (operator/scope/controller.ts) is built with. */
export interface ScopeControllerOptions {
  client: KubeClient;
  logger: Logger;
  mode: ScopeMode;
  clusterNamespace: string;
  /** The rules the dragnet serves, read at each computation. */
  rules: () => readonly CompiledRule[];
  /** The ModRule resourceVersion those rules are at; null before the first list. */
  rulesVersion: () => string | null;
  /** Whether the rule store has its first full lists. */
  rulesReady: () => boolean;
  /** Subscribes to rule changes; returns the unsubscribe. */
  onRulesChange: (listener: () => void) => () => void;
  /** Which resources serve each kind (operator/rules/discovery.ts). */
  discovery: CatalogSource;
  registry?: Registry;
  configurationName?: string;
  webhookName?: string;
  /** Quiet time after a change before computing (rules come in bursts); default 200 ms. */
  debounceMs?: number;
  /** Longest a stream of changes may hold a computation back; default 2 s. */
  maxDelayMs?: number;
  /**
   * After the live registration changes, how long before rules it covers are reported Ready: each API server
   * applies a new configuration from its own watch, which no API tells; default 1 s.
   */
  settleMs?: number;
  /** Rules this replica admitted that the store has not seen yet (they count in force); none when absent. */
  admitted?: Pick<AdmittedRules, 'knows' | 'landed' | 'versions' | 'onChange'>;
  /** The operator's own namespace: where the registration probes are created (dry run). */
  probeNamespace?: string;
  /** How long the configured net is held after a fallback (no replica narrows meanwhile); default 60 s. */
  holdMs?: number;
  /** Clock; injectable for tests. */
  now?: () => number;
  /** How long after it starts this replica waits before narrowing the registration (default 5 s). */
  narrowAfterStartMs?: number;
  /** The native policies: the last change seen (orders replicas), and a value that changes at every hand-over. */
  native?: { policiesVersion(): string | null; servingVersion(): string } | null;
  /** This replica's writer id in the stamp; default its start (ms) and a random part (a later start wins a tie). */
  id?: string;
  /** The API servers to probe one by one (their endpoints); absent: only the one the client reaches. */
  apiServers?: Pick<ApiServerTargets, 'targets' | 'refresh'>;
  /** This replica's view of the live registration, shared with the Ready gate and the status; default its own. */
  live?: LiveScopeView;
  /** What the live registration does for native rules, shared with the native controller; default its own. */
  nativeScopes?: NativeScopes;
  /**
   * Told each computation's per-rule reports (operator/scope/findings.ts); `narrowed` false when the registration is
   * the configured net (wide mode, or narrowing given up), where they are computed for this alone.
   */
  onScope?: (reports: readonly RuleScopeReport[], narrowed: boolean) => void;
}
