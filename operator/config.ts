import { Registry } from 'prom-client';
import type { ScopeMode } from '../scope/ownership';
import { Logger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { BudgetLimits } from '../util/budget';
import { RunningWebhook } from '../webhook/server';
import { QuarantineOptions } from '../webhook/quarantine';
import { RuleFailuresOptions } from '../webhook/rule-failures';
import { BackgroundAuditConfig } from './audit/background';
import { KubeClient } from '../kube/kube';
import { ClusterAccess } from '../kube/access';
import { NativeController, NativeMode } from './native/controller';
import type { CertMode } from './certs/serving';

export type { CertMode } from './certs/serving';

/* How the operator is configured and what a running one offers (operator/start.ts runs it). */

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
  /** How `client` reaches the API server: with it, each API server is probed by its own address (scope/apiservers). */
  access?: ClusterAccess;
  logger: Logger;
  registry?: Registry;
  /** Cancels a start-up that is still waiting for the API server. */
  signal?: AbortSignal;
}
