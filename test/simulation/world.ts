import { isJsonObject, JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { dragnetOf, readScope } from '../../scope/entry';
import { sendsRequest } from '../../scope/sends';
import { SCOPE_ANNOTATION } from '../../scope/ownership';
import { AdmissionRequest, AdmissionResponse } from '../../webhook/admission';
import { PeerTransport } from '../../operator/admission/peers';
import { DRAGNET_WEBHOOK, MUTATING_WEBHOOK_CONFIGURATION } from '../../kube/owned';
import { installedConfiguration } from '../../operator/testing/probed-cluster';
import { evaluateCel } from './cel';
import { Etcd, StoreConflict } from './etcd';
import { SimApiServer } from './apiserver';
import { CLUSTER_NAMESPACE, patchedLabels, Sabotage, SimReplica } from './replica';
import { Random } from './random';
import { Scenario } from './scenario';

/** The resources of the kinds the simulated users write (core v1, namespaced, all in the configured net). */
export const KIND_RESOURCES: Record<string, string> = {
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  Service: 'services',
};

/** How a ModRule write through an API server ended. */
export type RuleWriteResult =
  | { ok: true; object: JsonObject; replica: string | null; warnings?: string[] }
  | { ok: false; status: number; message: string; replica: string | null };

/** What became of an object written through an API server. */
export interface ObjectWriteResult {
  /** The replica the dragnet call went to; null: the API server's configuration does not send it (or none up). */
  replica: string | null;
  /** Whether that API server's loaded configuration sends it. */
  sent: boolean;
  labels: Record<string, string>;
  /** Why the call did not answer (timed out, replica down): failurePolicy Ignore. */
  ignored?: string;
}

/** Whether a configuration's dragnet entry sends a CREATE of `kind` in `namespace` (rules, selector, conditions). */
export function configSends(
  config: JsonObject | null,
  kind: string,
  namespace: string,
  nsLabels: Record<string, string>,
): boolean {
  const webhook = config ? dragnetOf(config, DRAGNET_WEBHOOK)?.webhook : null;
  if (!webhook) return false;
  const reg = readScope(webhook);
  const request = {
    operation: 'CREATE' as const,
    group: '',
    version: 'v1',
    resource: KIND_RESOURCES[kind],
    namespace,
    clusterScoped: false,
    namespaceLabels: nsLabels,
  };
  if (!sendsRequest({ ...reg, matchConditions: [] }, [], request)) return false;
  return reg.matchConditions.every((c) => evaluateCel(c.expression, request));
}

function timeout<T>(ms: number, what: Promise<T>): Promise<T | 'timeout'> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve('timeout'), ms);
    what.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e: unknown) => (clearTimeout(timer), reject(e instanceof Error ? e : new Error(String(e)))),
    );
  });
}

/**
 * The simulated cluster: one etcd, several API servers in front of it, the operator's replicas behind the webhook
 * Service, and the admission chain a user's write goes through (the ModRule validating webhook, the dragnet).
 */
export class World {
  readonly etcd = new Etcd();
  readonly servers: SimApiServer[];
  readonly replicas: SimReplica[];
  readonly trace: string[] = [];
  readonly start = Date.now();
  configWrites = 0;
  requestsInFlight = 0;
  private uids = 0;
  /** The serving key's version in the Secret (rotations bump it; replicas load it after a delay). */
  keyVersion = 0;

  constructor(
    readonly random: Random,
    readonly scenario: Scenario,
    readonly logger: Logger,
    sabotage: Sabotage = {},
  ) {
    for (const ns of ['team-a', 'team-b', CLUSTER_NAMESPACE])
      this.etcd.put(
        'namespaces',
        {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } },
        },
        'create',
      );
    this.etcd.put('mutatingwebhookconfigurations', installedConfiguration(), 'create');
    this.etcd.onEvent((e) => {
      if (e.resource === 'mutatingwebhookconfigurations')
        this.log(
          `etcd: configuration rv ${String((e.object.metadata as JsonObject).resourceVersion)} ${describeStamp(e.object)}`,
        );
    });
    this.servers = scenario.servers.map(
      (s, i) =>
        new SimApiServer({
          name: `api${i}`,
          etcd: this.etcd,
          random: random.fork(),
          cacheLag: s.cacheLag,
          loadLag: s.loadLag,
          faults: s.faults,
          onConfigWrite: () => this.configWrites++,
          log: (line) => this.log(line),
        }),
    );
    const world = {
      logger,
      peerUrls: (self: SimReplica) => this.replicas.filter((r) => r !== self).map((r) => r.url),
      transport: (from: SimReplica) => this.transport(from),
      inFlight: (d: number) => (this.requestsInFlight += d),
      apiServers: () => this.servers.map((s) => ({ name: s.name, client: s.client() })),
    };
    this.replicas = Array.from(
      { length: scenario.replicas },
      (_, i) => new SimReplica(`replica${i}`, world, sabotage, scenario.clockSkewMs[i] ?? 0),
    );
  }

  /** One line of the schedule, stamped with the simulated time. */
  log(line: string): void {
    this.trace.push(`${String(Date.now() - this.start).padStart(6)}ms ${line}`);
  }

  nsLabels(namespace: string): Record<string, string> {
    const ns = this.etcd.get('namespaces', '', namespace);
    return ((ns?.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
  }

  /** The configuration stored now. */
  stored(): JsonObject | null {
    return this.etcd.get('mutatingwebhookconfigurations', '', MUTATING_WEBHOOK_CONFIGURATION) ?? null;
  }

  /** A ready endpoint of the webhook Service, as kube-proxy picks one. */
  private endpoint(): SimReplica | null {
    const ready = this.replicas.filter((r) => r.ready);
    return ready.length ? this.random.pick(ready) : null;
  }

  private transport(from: SimReplica): PeerTransport {
    return async (url, body, signature, timeoutMs) => {
      const to = this.replicas.find((r) => r.url === url);
      await new Promise((r) => setTimeout(r, this.random.between(0, 2)));
      if (!to?.up) return { ok: false, status: 0, error: 'connect ECONNREFUSED' };
      if (this.random.chance(this.scenario.lostNotices)) {
        await new Promise((r) => setTimeout(r, timeoutMs));
        this.log(`peer notice ${from.name} -> ${to.name} lost`);
        return { ok: false, status: 0, error: 'timed out' };
      }
      const status = await to.receiveNotice(body, signature);
      if (status !== 204) this.log(`peer notice ${from.name} -> ${to.name} refused: HTTP ${status}`);
      else if (process.env.SIM_DETAIL) {
        const n = JSON.parse(body) as {
          namespace: string;
          name: string;
          generation: number;
          answered?: string;
        };
        this.log(
          `peer notice ${from.name} -> ${to.name}: ${n.namespace}/${n.name} gen ${n.generation}${n.answered ? ` answered ${n.answered}` : ''}`,
        );
      }
      return status === 204 ? { ok: true } : { ok: false, status, error: `HTTP ${status}` };
    };
  }

  /** The validating webhook's answer, or why the write is refused (denied, timed out, failed). */
  private async callWebhook(
    replica: SimReplica,
    request: ReturnType<typeof admissionRequest>,
  ): Promise<AdmissionResponse | string> {
    const answer = await timeout(
      10_000,
      replica.validate(request, `${replica.url}/validate-modrule?timeout=10s`),
    ).catch((e: Error) => e);
    if (answer === 'timeout') return 'webhook timed out';
    if (answer instanceof Error) return answer.message;
    return answer.allowed ? answer : (answer.status?.message ?? 'denied');
  }

  /** A ModRule create, update or delete through `server`: validating webhook on an endpoint, then etcd. */
  async writeRule(
    server: SimApiServer,
    op: 'create' | 'update' | 'delete',
    namespace: string,
    name: string,
    spec?: JsonObject,
  ): Promise<RuleWriteResult> {
    await new Promise((r) => setTimeout(r, this.random.between(0, 2)));
    if (!server.up) return { ok: false, status: 0, message: `${server.name} is down`, replica: null };
    const current = this.etcd.get('modrules', namespace, name);
    try {
      if (op === 'delete')
        return { ok: true, object: this.etcd.delete('modrules', namespace, name), replica: null };
      if (op === 'update' && !current) return { ok: false, status: 404, message: 'not found', replica: null };
      if (op === 'create' && current)
        return { ok: false, status: 409, message: 'already exists', replica: null };
      const meta = (current?.metadata ?? {
        name,
        namespace,
        uid: `uid-${++this.uids}`,
        generation: 0,
      }) as JsonObject;
      const object: JsonObject = {
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { ...meta, generation: Number(meta.generation) + 1 },
        spec: spec ?? {},
      };
      const replica = this.endpoint();
      if (!replica)
        return {
          ok: false,
          status: 500,
          message: 'failed calling webhook: no endpoints available',
          replica: null,
        };
      const type = { group: 'api.kubemod.io', version: 'v1beta1', kind: 'ModRule', resource: 'modrules' };
      const request = admissionRequest(
        { operation: op === 'create' ? 'CREATE' : 'UPDATE', ...type },
        object,
        current,
      );
      const answer = await this.callWebhook(replica, request);
      if (typeof answer === 'string')
        return { ok: false, status: 500, message: answer, replica: replica.name };
      if (!server.up)
        return { ok: false, status: 0, message: `${server.name} went away`, replica: replica.name };
      for (const w of answer.warnings ?? []) this.log(`  warning to the writer: ${w}`);
      const stored = this.etcd.put(
        'modrules',
        object,
        current ? String((current.metadata as JsonObject).resourceVersion) : 'create',
      );
      return { ok: true, object: stored, replica: replica.name, warnings: answer.warnings ?? [] };
    } catch (err) {
      if (err instanceof StoreConflict)
        return { ok: false, status: err.status, message: err.message, replica: null };
      throw err;
    }
  }

  /** An object CREATE through `server`: the dragnet is called when that API server's configuration sends it. */
  async writeObject(
    server: SimApiServer,
    kind: string,
    namespace: string,
    name: string,
  ): Promise<ObjectWriteResult | null> {
    await new Promise((r) => setTimeout(r, this.random.between(0, 2)));
    if (!server.up) return null;
    const object: JsonObject = {
      apiVersion: 'v1',
      kind,
      metadata: { name, namespace, labels: { app: 'sim' } },
    };
    const sent = configSends(server.loaded, kind, namespace, this.nsLabels(namespace));
    if (!sent) return { replica: null, sent, labels: patchedLabels(object, {} as AdmissionResponse) };
    const replica = this.endpoint();
    if (!replica)
      return {
        replica: null,
        sent,
        labels: patchedLabels(object, {} as AdmissionResponse),
        ignored: 'no endpoints',
      };
    const request = admissionRequest(
      { operation: 'CREATE', group: '', version: 'v1', kind, resource: KIND_RESOURCES[kind] },
      object,
      undefined,
    );
    const answer = await timeout(
      10_000,
      replica.dragnet(request, `${replica.url}/dragnet-webhook?timeout=10s`),
    ).catch((e: Error) => e);
    if (answer === 'timeout' || answer instanceof Error)
      return {
        replica: replica.name,
        sent,
        labels: patchedLabels(object, {} as AdmissionResponse),
        ignored: answer === 'timeout' ? 'timed out' : answer.message,
      };
    return { replica: replica.name, sent, labels: patchedLabels(object, answer) };
  }
}

let requests = 0;

interface RequestType {
  operation: 'CREATE' | 'UPDATE';
  group: string;
  version: string;
  kind: string;
  resource: string;
}

function admissionRequest(
  { operation, group, version, kind, resource }: RequestType,
  object: JsonObject,
  old: JsonObject | undefined,
): AdmissionRequest {
  const meta = object.metadata as JsonObject;
  return {
    uid: `req-${++requests}`,
    kind: { group, version, kind },
    resource: { group, version, resource },
    name: String(meta.name),
    namespace: String(meta.namespace),
    operation,
    userInfo: { username: 'sim-user' },
    object,
    oldObject: old ?? null,
    dryRun: false,
  };
}

/** The stamp of a configuration, short: writer, rules version, pending rules, hold. */
export function describeStamp(config: JsonObject): string {
  const meta = config.metadata as JsonObject;
  const annotations = (isJsonObject(meta.annotations) ? meta.annotations : {}) as Record<string, string>;
  const text = annotations[SCOPE_ANNOTATION];
  if (!text) return '(installed, no stamp)';
  const stamp = JSON.parse(text) as {
    writer: string;
    rulesVersion: string;
    hash: string;
    pending?: unknown[];
    hold?: number;
  };
  const webhook = dragnetOf(config, DRAGNET_WEBHOOK)?.webhook;
  const reg = webhook ? readScope(webhook) : null;
  const resources = reg ? [...new Set(reg.rules.flatMap((r) => r.resources))].join(',') : '-';
  const selector = reg ? JSON.stringify(reg.namespaceSelector) : '-';
  const conditions = reg?.matchConditions.map((c) => c.expression).join(' && ') ?? '';
  return `writer=${stamp.writer.split('-').slice(1).join('-')} rules@${stamp.rulesVersion} hash=${stamp.hash.slice(0, 8)} resources=[${resources}] conditions=${reg?.matchConditions.length ?? 0}${stamp.pending?.length ? ` pending=${stamp.pending.length}` : ''}${stamp.hold ? ' HOLD' : ''}${process.env.SIM_DETAIL ? ` pending=${JSON.stringify(stamp.pending ?? [])} namespaces=${selector} when=${conditions}` : ''}`;
}
