import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import winston from 'winston';
import { JsonObject } from '../../util/json';
import { nameOf } from '../../util/meta';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { RunningOperator, startOperator } from '../../operator/start';
import { policyCollection, RULE_ANNOTATION, SERVE_ANNOTATION } from '../../native';
import { apply, ClusterLedger, remove, waitFor, webhookManifests } from './cluster';
import { freePort } from './controlplane';
import { serviceAccountClient } from './credentials';
import { installBundle } from './install';
import { messageOf } from '../../util/errors';
import { E2eCluster, startCluster } from './target';

/*
 * A cluster for the native-serving e2e cases, in either of the suite's modes (target.ts): a control plane of its own,
 * which it may restart, or an existing cluster (the operator in this process is called at E2eCluster.webhookHost,
 * objects have names unique to the run, and everything is removed afterwards).
 * The bundle is installed as a user would (webhooks by URL, scoped to one labelled namespace, so the policies,
 * which take the dragnet's net, only touch that namespace too); operators run with the bundle's ServiceAccount and
 * a logger the cases can read.
 */

export const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;

/** One log line an operator wrote (JSON lines, as in production). */
export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly [field: string]: unknown;
}

function recordingLogger(lines: LogLine[], replica: number): winston.Logger {
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString('utf8').split('\n'))
        if (text.trim()) lines.push({ ...(JSON.parse(text) as LogLine), replica });
      done();
    },
  });
  return winston.createLogger({
    level: process.env.E2E_LOG ? 'debug' : 'info',
    format: winston.format.json(),
    transports: [new winston.transports.Stream({ stream })],
  });
}

export class NativeCluster {
  readonly operators: Array<RunningOperator | null> = [];
  readonly logs: LogLine[] = [];
  private readonly dirs: string[] = [];
  readonly admin: KubeClient;
  private readonly ledger: ClusterLedger;

  private constructor(
    readonly cluster: E2eCluster,
    readonly ns: string,
    private readonly webhook: { host: string; port: number },
  ) {
    this.admin = cluster.admin();
    this.ledger = new ClusterLedger(this.admin);
  }

  /** Sets up the cluster and one operator (`--native-policies opt-in`). */
  static async start(prefix: string): Promise<NativeCluster> {
    const run = randomBytes(3).toString('hex');
    const ns = `${prefix}-${run}`;
    const cp = await startCluster();
    try {
      const webhook = { host: cp.webhookHost, port: await cp.webhookPort() };
      const cluster = new NativeCluster(cp, ns, webhook);
      const { admin, ledger } = cluster;
      await installBundle(admin, ledger);
      await ledger.apply({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { [ns]: 'true' } },
      });
      const { mutating, validating } = webhookManifests(`https://${webhook.host}:${webhook.port}`, ns);
      await ledger.apply(mutating);
      await ledger.apply(validating);
      ledger.track('/api/v1/namespaces/kubemod-system/secrets/kubemod-webhook-server-cert');
      await cluster.startOperator();
      await waitFor('the webhook to admit ModRules', async () => {
        await apply(admin, MODRULES(ns), cluster.labelRule('probe', 'probe', false));
        return true;
      });
      await remove(admin, `${MODRULES(ns)}/probe`);
      return cluster;
    } catch (err) {
      await cp.stop();
      throw err;
    }
  }

  /** Starts an operator replica in the first free slot (slot 0 is the one the webhooks call); returns the slot. */
  async startOperator(): Promise<number> {
    const free = this.operators.indexOf(null);
    const replica = free < 0 ? this.operators.length : free;
    const sa = await serviceAccountClient(
      this.admin,
      this.cluster.kubeConfig(),
      'kubemod-system',
      'kubemod-operator',
    );
    if (sa.dir) this.dirs.push(sa.dir);
    const port = replica === 0 ? this.webhook.port : await freePort();
    const operator = await startOperator(
      {
        clusterNamespace: 'kubemod-system',
        podNamespace: 'kubemod-system',
        webhookPort: port,
        healthPort: 0,
        host: this.cluster.listenHost,
        certMode: 'self',
        certDir: '',
        extraHosts: [this.webhook.host],
        nativePolicies: 'opt-in',
        nativeSettleMs: 300,
      },
      { client: sa.client, logger: recordingLogger(this.logs, replica) },
    );
    this.operators[replica] = operator;
    await waitFor('the operator to be ready', async () => operator.isReady());
    return replica;
  }

  /** Stops a replica (every request to its webhook then fails, and the dragnet's failurePolicy decides). */
  async stopOperator(replica: number): Promise<void> {
    await this.operators[replica]?.stop();
    this.operators[replica] = null;
  }

  /** A Patch rule labelling ConfigMaps of the namespace, asking to be served natively unless `native` is false. */
  labelRule(name: string, value: string, native = true): JsonObject {
    return this.modRule(
      name,
      {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: `/metadata/labels/${name}`, value }],
      },
      native,
    );
  }

  modRule(name: string, spec: JsonObject, native = true): JsonObject {
    return {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: {
        name,
        namespace: this.ns,
        ...(native ? { annotations: { [SERVE_ANNOTATION]: 'true' } } : {}),
      },
      spec,
    };
  }

  /** Creates a ConfigMap in the namespace (with these annotations: kubectl's last-applied one, say). */
  configMap(name: string, annotations: JsonObject = {}): Promise<JsonObject> {
    return this.admin.request('POST', `/api/v1/namespaces/${this.ns}/configmaps`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, annotations }, data: { k: 'v' } },
    });
  }

  /** Dragnet requests a replica's webhook answered so far. */
  async dragnetCalls(replica = 0): Promise<number> {
    const metric = this.operators[replica]?.webhook.registry.getSingleMetric(
      'modrule_webhook_requests_total',
    );
    if (!metric) return 0;
    const { values } = await metric.get();
    return values.filter((v) => v.labels.endpoint === 'dragnet').reduce((s, v) => s + v.value, 0);
  }

  /** The API server's metrics (null where the kubeconfig's user may not read them). */
  async apiServerMetrics(): Promise<string | null> {
    const { status, body } = await this.cluster.get('/metrics');
    return status === 200 ? body : null;
  }

  /** Removes the run's ModRules (their policies go with them), stops the operators, restores the cluster. */
  async stop(): Promise<string[]> {
    const problems: string[] = [];
    const rules = await this.admin.request('GET', MODRULES(this.ns)).catch(() => ({ items: [] }));
    for (const r of (rules.items ?? []) as JsonObject[])
      await remove(this.admin, `${MODRULES(this.ns)}/${nameOf(r)}`);
    // Whatever policy of the run's rules is left (an operator stopped before it could delete it) goes too.
    for (const kind of [
      'MutatingAdmissionPolicyBinding',
      'MutatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'ValidatingAdmissionPolicy',
    ]) {
      const list = await this.admin.request('GET', policyCollection(kind)).catch(() => ({ items: [] }));
      for (const p of (list.items ?? []) as JsonObject[]) {
        const annotations = ((p.metadata as JsonObject).annotations ?? {}) as JsonObject;
        if (!String(annotations[RULE_ANNOTATION] ?? '').startsWith(`${this.ns}/`)) continue;
        await this.admin.request('DELETE', `${policyCollection(kind)}/${nameOf(p)}`).catch((e: unknown) => {
          if (!(e instanceof KubeApiError && e.status === 404)) problems.push(`delete ${kind} ${nameOf(p)}`);
        });
      }
    }
    for (let i = 0; i < this.operators.length; i++) await this.stopOperator(i);
    problems.push(...(await this.ledger.restore()));
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
    try {
      await this.cluster.stop();
    } catch (err) {
      problems.push(messageOf(err));
    }
    return problems;
  }
}
