import { Registry } from 'prom-client';
import type { ReferenceSource } from '../store/references';
import { RuleStore } from '../store/rules';
import { BudgetLimits } from '../util/budget';
import { Logger } from '../util/logger';
import { RuleRef } from '../engine/admit';
import { DemotionReason, FairnessOptions } from './fairness';
import { ServedKinds } from './modrule';
import { PeerReceiver } from './peer';
import { PodBindingEvent } from './podbinding';
import { RuleQuarantine } from './quarantine';
import { RuleAdmissionHook, StoreFreshness } from './rule-admission';
import { RuleFailures } from './rule-failures';
import { RuleUnenforced } from './rule-unenforced';
import { TlsSource } from './tls';
import { AnswerMetrics } from './answer-metrics';
import { Endpoint } from './endpoints';
import { Handler } from './handler';

/** How the webhook server listens: TLS, ports, limits, readiness and metrics (what every endpoint shares). */
export interface TransportOptions {
  tls: TlsSource;
  /** HTTPS port for the API server (0 = any free port). */
  port: number;
  /** Interface to listen on; default all interfaces. */
  host?: string;
  /** Plain-HTTP port for /healthz, /readyz, /metrics (0 = any free port). */
  healthPort: number;
  /** Interface for the health port; default the same as host. */
  healthHost?: string;
  logger: Logger;
  /** Where metrics go; a new Registry when omitted. */
  registry?: Registry;
  /** Also collect prom-client's default process metrics; default false. */
  processMetrics?: boolean;
  /** Whether the server may take requests (rules loaded, not draining); /readyz answers 503 until it returns true. */
  isReady: () => boolean;
  /** Request body cap; default 8 MiB. */
  maxBodyBytes?: number;
  /** How long close() waits for in-flight requests before cutting connections; default 10000 ms. */
  closeTimeoutMs?: number;
  /** Time for a client to send the request headers; default 30 s (HTTP_TIMEOUTS). */
  headersTimeoutMs?: number;
  /** Time for a client to send the whole request; default 60 s (HTTP_TIMEOUTS). */
  requestTimeoutMs?: number;
}

/** What the dragnet endpoint evaluates against, and how it holds, budgets and reports. */
export interface DragnetOptions {
  store: RuleStore;
  /**
   * Resolves when the store holds the cluster's rules (the operator's first full sync). Until then dragnet
   * requests are held, up to the API server's timeout less a second, then answered HTTP 503 so the webhook's
   * failurePolicy decides: never an answer from an empty store. Omitted: the store is complete from the start.
   */
  rulesLoaded?: Promise<void>;
  /** Dragnet requests wait, bounded, for the store to have the rules admitted a moment ago that could reach them. */
  storeFreshness?: StoreFreshness;
  /** Work and time one dragnet request may use, all rules together; default DEFAULT_BUDGET. */
  budget?: BudgetLimits;
  /** Demotion of namespaces that keep exhausting budgets (tests shorten it); the budget comes from `budget`. */
  fairness?: Omit<FairnessOptions, 'budget'>;
  /**
   * Called once when a namespace is demoted (not on renewals), with the namespace's own ModRules that matched or
   * failed in the request that demoted it: the server has no Kubernetes client, the operator can put a Warning
   * Event on them. Errors are logged.
   */
  onDemotion?: (demotion: NamespaceDemotion) => unknown;
  /**
   * Rules that keep running out of their own share of the budget are set aside (webhook/quarantine.ts); the caller's
   * (the operator shows quarantines on the ModRules), else the endpoint's own, with the default options.
   */
  quarantine?: RuleQuarantine;
  /** Where rules' run-time failures are recorded (the operator shows them on the ModRules); else the endpoint's own. */
  failures?: RuleFailures;
  /** The objects rules read besides their object (syntheticRefs.owner, spec.references); none when omitted. */
  references?: ReferenceSource;
  /** Where what Warn/DryRun rules would have done is recorded (the operator shows it on the ModRules); else its own. */
  unenforced?: RuleUnenforced;
  /** Keep the record of the rules that patched an object on it (engine/record.ts); default off. */
  recordPatchedBy?: boolean;
}

/** What the ModRule, pod-binding and probe endpoints need, beside the dragnet's store. */
export interface RuleEndpointOptions {
  /** Called (not awaited) for every non-dry-run pods/binding CREATE. */
  onPodBinding?: (binding: PodBindingEvent) => unknown;
  /** Called for every valid ModRule CREATE/UPDATE before it is admitted (the operator: in force when admitted). */
  ruleAdmission?: RuleAdmissionHook;
  /** What the cluster serves (the operator's discovery): ModRules naming other kinds are admitted with a warning. */
  servedKinds?: ServedKinds;
  /** Takes the notices of peer replicas of the rules they admit (POST /peer/admitted, signed). */
  peer?: PeerReceiver;
}

/** Every endpoint's options: the dragnet's and the others'. */
export type EndpointOptions = DragnetOptions & RuleEndpointOptions;

/** What onDemotion receives. */
export interface NamespaceDemotion {
  namespace: string;
  reason: DemotionReason;
  rules: RuleRef[];
}

/** The running webhook and health servers. */
export interface RunningWebhook {
  /** https://HOST:PORT of the webhook server. */
  readonly url: string;
  /** http://HOST:PORT of the health/metrics server. */
  readonly healthUrl: string;
  readonly port: number;
  readonly healthPort: number;
  readonly registry: Registry;
  /** The HTTPS server's slow-client limits in force (ms): headers, whole request, and how often Node checks them. */
  readonly httpTimeouts: { headersMs: number; requestMs: number; checkingIntervalMs: number };
  /** Stops accepting connections, lets in-flight requests finish, then resolves. */
  close(): Promise<void>;
}

/** What the server shares with the endpoints it registers. */
export interface ServerServices {
  logger: Logger;
  registry: Registry;
  /** Answers that are not the endpoint's own word (failed open, held), by endpoint. */
  answers: AnswerMetrics;
}

/** An endpoint to register: its name (metrics, logs) and its handler, built once with the server's services. */
export interface EndpointRegistration {
  endpoint: Endpoint;
  handler(services: ServerServices): Handler;
  /** Releases what the handler keeps (metrics following the store, subscriptions) when the server closes. */
  close?(): void;
}
