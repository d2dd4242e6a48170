import { Registry } from 'prom-client';
import { Logger } from '../../util/logger';
import { CompiledRule } from '../../rule/compile';
import { RuleStore } from '../../store/rules';
import { BackoffOptions } from '../../kube/backoff';
import { KubeClient } from '../../kube/kube';
import { NativeScope } from './status';
import { StatusReporter } from '../status/reporter';
import { StatusSink } from '../status/reporter';

/* The native policy controller's configuration and its per-rule state (operator/native/controller.ts). */

/** off: no policies; opt-in: rules annotated native.modrule.io/serve=true; all: every rule not annotated false. */
export type NativeMode = 'off' | 'opt-in' | 'all';

export interface NativeControllerOptions {
  client: KubeClient;
  store: RuleStore;
  status: StatusReporter | null;
  /** Where Ready reports go (the dragnet scope's gate); default `status`. */
  sink?: StatusSink | null;
  logger: Logger;
  mode: Exclude<NativeMode, 'off'>;
  clusterNamespace: string;
  /** The operator's namespace: the dragnet webhook leaves it alone, and so do the policies. */
  podNamespace: string;
  /** The dragnet webhook's configuration (its scope is the policies' scope). */
  webhookConfiguration?: string;
  /** How long an accepted policy runs alongside the webhook before the webhook leaves the rule to it; 2000 ms. */
  settleMs?: number;
  /** Everything is checked again this often (refused policies retried, the dragnet scope re-read); 60 s. */
  resyncMs?: number;
  /**
   * How long a rule whose reconcile failed (a transient API error) waits before it is tried again the first time:
   * the delay doubles with each failure in a row, each randomised to [d/2, d); 2000 ms.
   */
  retryMs?: number;
  backoff?: BackoffOptions;
  /** What the dragnet registration does for a native rule's objects (its Ready message says so). */
  net?: (rule: string) => NativeScope;
  /** Where modrule_native_rules and modrule_native_edit_holdbacks_total go. */
  registry?: Registry;
  /**
   * Edits admitted (here or by a peer) and not stored yet: while one of a rule is pending, the controller writes
   * nothing for the rule (its binding stays deleted until the edit lands, or is written again once it failed).
   */
  edits?: PendingEdits;
  /** The API servers besides the one `client` reaches, each probed directly when a policy is taken out of force. */
  apiServers?: () => readonly ProbeClient[];
}

/** Edits of ModRules admitted and not stored yet (AdmittedRules). */
export interface PendingEdits {
  /** Whether a newer generation than `generation` of the rule (uid) was admitted and has not landed or failed yet. */
  editPending(namespace: string, name: string, uid: string, generation: number): boolean;
}

/** One API server to probe directly, named as logs and warnings name it. */
export interface ProbeClient {
  name: string;
  client: KubeClient;
}

/** Where one rule that asks to be served natively is. */
export interface RuleState {
  /** The store's rule the policy was written for and that is (or will be) left to it. */
  held?: CompiledRule;
  kind?: string;
  acceptedAt?: number;
  /** The API server answered the probe of the version written (it runs it, not just stores it). */
  inForce?: boolean;
  native: boolean;
  /** While native: what its guards check (the webhook keeps the objects they decline). */
  guards?: string[];
}
