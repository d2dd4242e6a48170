import { Readable } from 'node:stream';
import { IncomingMessage, ServerResponse } from 'node:http';
import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { RuleStore } from '../../store/rules';
import { ResourceCatalog } from '../../scope/catalog';
import { AdmissionRequest, AdmissionResponse } from '../../webhook/admission';
import { handleDragnet } from '../../webhook/dragnet';
import { answerValidateModRule, RuleAdmissionHook } from '../../webhook/rule-admission';
import { handlePeerNotice, PeerKeys, SIGNATURE_HEADER } from '../../webhook/peer';
import { holdBudgetMs } from '../../webhook/hold';
import { KubeClient } from '../../kube/kube';
import { AdmittedRules } from '../../operator/rules/admitted';
import { ClusterSync } from '../../operator/rules/sync';
import { ScopeController } from '../../operator/scope/controller';
import { ProbeTarget } from '../../operator/scope/probe';
import { ConfirmedRules } from '../../operator/scope/ready-gate';
import { PeerNotifier, PeerTransport, receivePeerNotice } from '../../operator/admission/peers';
import { createRuleAdmission } from '../../operator/admission/rule-admission';

export const CLUSTER_NAMESPACE = 'kubemod-system';

const CATALOG = ResourceCatalog.builtin();
const DISCOVERY = { catalog: () => CATALOG, onChange: () => () => undefined };

/** A replica's parts, wired as operator/state.ts, controllers.ts and serving.ts wire them (the in-force subset). */
interface Parts {
  store: RuleStore;
  admitted: AdmittedRules;
  sync: ClusterSync;
  scope: ScopeController;
  peers: PeerNotifier;
  hook: RuleAdmissionHook;
}

/** What a replica needs from the simulated world. */
export interface ReplicaWorld {
  logger: Logger;
  /** The peers' addresses (every replica but this one). */
  peerUrls(self: SimReplica): string[];
  transport(from: SimReplica): PeerTransport;
  /** Tells the run a dragnet request or admission started or ended (the no-hang check). */
  inFlight(delta: number): void;
  /** Every API server by its own address, as the kubernetes Service's endpoints list them (the probe asks each). */
  apiServers(): ProbeTarget[];
}

/** Hooks that break the protocol on purpose: the harness must catch them (simulation.test.ts). */
export interface Sabotage {
  /** The dragnet answers from the store at once, without waiting for rules admitted a moment ago. */
  skipHold?: boolean;
}

/**
 * One operator replica of the simulation: the real RuleStore, AdmittedRules, ClusterSync (ModRule, Namespace and
 * Node informers), ScopeController (its informer on the configuration, widener, probe, writer), PeerNotifier and
 * createRuleAdmission, connected to one API server; the dragnet answer is the real hold then the real engine.
 */
export class SimReplica {
  private parts: Parts | null = null;
  private incarnation = 0;
  /** Not an endpoint of the webhook Service (starting, draining or down). */
  draining = false;
  /** The signing key this replica uses (the serving key it has loaded). */
  keyVersion = 0;
  private running = 0;

  constructor(
    readonly name: string,
    private readonly world: ReplicaWorld,
    private readonly sabotage: Sabotage = {},
    /** This replica's clock against the world's (the 'clock-skew' fault). */
    private readonly skewMs = 0,
  ) {}

  get url(): string {
    return `https://${this.name}:9443`;
  }

  /** An endpoint of the webhook Service: up, its first lists in, not draining. */
  get ready(): boolean {
    return !!this.parts && !this.draining && this.parts.sync.isReady();
  }

  get up(): boolean {
    return this.parts !== null;
  }

  /** Requests being answered now. */
  get busy(): number {
    return this.running;
  }

  /** Rules admitted and not stored yet (the no-hang check at the end). */
  pendingAdmitted(): number {
    return this.parts?.admitted.rules().length ?? 0;
  }

  start(client: KubeClient): void {
    const logger = this.world.logger.child({ replica: this.name });
    const store = new RuleStore({ clusterNamespace: CLUSTER_NAMESPACE, keepSource: false });
    const now = () => Date.now() + this.skewMs;
    const admitted = new AdmittedRules({ client, logger, clusterNamespace: CLUSTER_NAMESPACE, now });
    const sync = new ClusterSync({ client, store, logger, status: null, observer: admitted.handlers() });
    const scope = new ScopeController({
      ...{ client, logger, admitted, mode: 'rules' as const },
      apiServers: { targets: () => this.world.apiServers(), refresh: async () => undefined },
      clusterNamespace: CLUSTER_NAMESPACE,
      probeNamespace: CLUSTER_NAMESPACE,
      rules: () => [...store.allRules(), ...admitted.rules()],
      rulesVersion: () => sync.rulesVersion(),
      rulesReady: () => sync.isReady(),
      onRulesChange: (listener) => store.onChange(listener),
      discovery: DISCOVERY,
      now,
      id: `${now()}-${this.name}-${++this.incarnation}`,
    });
    const peers = new PeerNotifier({
      ...{ client, logger, namespace: CLUSTER_NAMESPACE, port: 9443 },
      peers: this.world.peerUrls(this),
      keys: () => this.keys.keys(),
      transport: this.world.transport(this),
      now,
    });
    const hook = createRuleAdmission({
      store,
      admitted,
      scope,
      peers,
      logger,
      confirmed: new ConfirmedRules(),
      now,
    });
    this.parts = { store, admitted, sync, scope, peers, hook };
    this.draining = false;
    sync.start();
    scope.start();
    peers.start();
  }

  /** Stops serving (drains the requests under way), then stops every part. */
  async stop(): Promise<void> {
    const parts = this.parts;
    if (!parts) return;
    this.draining = true;
    for (let waited = 0; this.running > 0 && waited < 15_000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    this.parts = null;
    await parts.scope.stop();
    await parts.sync.stop();
    parts.admitted.stop();
    await parts.peers.stop();
  }

  /** The secret the peers' keys derive from (the CA key every replica shares; it changes with a rotation). */
  key(): string {
    return `serving-key-${this.keyVersion}`;
  }

  /** This replica's peer keys: the current one and the one before the last rotation it saw (webhook/peer.ts). */
  private readonly keys = new PeerKeys(() => this.key());

  /** POST /validate-modrule, as the webhook server answers it. */
  async validate(request: AdmissionRequest, url: string): Promise<AdmissionResponse> {
    const parts = this.parts;
    if (!parts) throw new Error(`${this.name} is down`);
    return this.serving(async () => {
      const decision = await answerValidateModRule(request, url, {
        clusterNamespace: CLUSTER_NAMESPACE,
        hook: parts.hook,
        logger: this.world.logger,
      });
      return decision.response;
    });
  }

  /** POST /dragnet-webhook: the hold for rules admitted a moment ago (within the budget), then the store. */
  async dragnet(request: AdmissionRequest, url: string): Promise<AdmissionResponse> {
    const parts = this.parts;
    if (!parts) throw new Error(`${this.name} is down`);
    return this.serving(async () => {
      const fresh = this.sabotage.skipHold
        ? null
        : parts.admitted.until(request.namespace ?? '', holdBudgetMs(url));
      if (fresh) await fresh;
      return handleDragnet(request, parts.store.snapshot()).response;
    });
  }

  /** POST /peer/admitted through the real handler (signature, age), taken as serving.ts wires it. */
  async receiveNotice(body: string, signature: string): Promise<number> {
    const parts = this.parts;
    if (!parts) return 0;
    const req = Object.assign(Readable.from([Buffer.from(body)]), {
      headers: { [SIGNATURE_HEADER]: signature },
    }) as unknown as IncomingMessage;
    let status = 0;
    const res = {
      statusCode: 200,
      writeHead(code: number) {
        status = code;
        return res;
      },
      end() {
        status ||= res.statusCode;
      },
    };
    await handlePeerNotice(req, res as unknown as ServerResponse, {
      keys: () => this.keys.keys(),
      // As operator/serving.ts takes a notice.
      receive: (notice) => receivePeerNotice(parts.admitted, parts.store, notice),
    });
    return status;
  }

  private async serving<T>(fn: () => Promise<T>): Promise<T> {
    this.running++;
    this.world.inFlight(1);
    try {
      return await fn();
    } finally {
      this.running--;
      this.world.inFlight(-1);
    }
  }
}

/** The object a dragnet answer makes of `object` (its JSON patch applied). */
export function patchedLabels(object: JsonObject, response: AdmissionResponse): Record<string, string> {
  const labels = { ...(((object.metadata as JsonObject).labels ?? {}) as Record<string, string>) };
  if (!response.patch) return labels;
  const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as Array<{
    op: string;
    path: string;
    value?: unknown;
  }>;
  for (const op of ops) {
    if (op.path === '/metadata/labels' && op.value && typeof op.value === 'object')
      Object.assign(labels, op.value);
    const m = /^\/metadata\/labels\/(.+)$/.exec(op.path);
    if (m && (op.op === 'add' || op.op === 'replace'))
      labels[m[1].replace(/~1/g, '/').replace(/~0/g, '~')] = String(op.value);
  }
  return labels;
}
