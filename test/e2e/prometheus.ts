import { ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';
import { bundleObjects } from './cluster';
import { freePort } from './controlplane';
import { E2eCluster } from './target';

// A real Prometheus server (Debian's prometheus package) for the monitoring e2e: scrape configuration derived from
// config/monitoring/service_monitor.yaml, alerts.yaml with shorter `for:` and evaluation interval, the HTTP API.

const ROOT = join(__dirname, '..', '..');
const MONITORING = join(ROOT, 'config', 'monitoring');

/** alerts.yaml with every group evaluated every second and every `for:` shortened to forSeconds; nothing else. */
export function fastAlerts(forSeconds: number): JsonObject {
  const rules = parse(readFileSync(join(MONITORING, 'alerts.yaml'), 'utf8')) as JsonObject;
  for (const group of rules.groups as JsonObject[]) {
    group.interval = '1s';
    for (const rule of group.rules as JsonObject[]) if (rule.for !== undefined) rule.for = `${forSeconds}s`;
  }
  return rules;
}

/** The scrape job prometheus-operator makes of the ServiceMonitor, for a replica listening on 127.0.0.1:port. */
export function serviceMonitorJob(port: number, pod: string): JsonObject {
  const monitor = parse(readFileSync(join(MONITORING, 'service_monitor.yaml'), 'utf8')) as JsonObject;
  const endpoint = ((monitor.spec as JsonObject).endpoints as JsonObject[])[0];
  // The Service port it names, the container port behind it: the operator's --health-port (8081) in a pod.
  const service = bundleObjects().find((o) => o.kind === 'Service')!;
  const servicePort = ((service.spec as JsonObject).ports as JsonObject[]).find(
    (p) => p.name === endpoint.port,
  );
  if (!servicePort) throw new Error(`the Service has no port named ${String(endpoint.port)}`);
  const deployment = bundleObjects().find((o) => o.kind === 'Deployment')!;
  const container = (
    (((deployment.spec as JsonObject).template as JsonObject).spec as JsonObject).containers as JsonObject[]
  )[0];
  const containerPort = (container.ports as JsonObject[]).find(
    (p) => p.name === servicePort.targetPort || p.containerPort === servicePort.targetPort,
  );
  if (containerPort?.containerPort !== 8081)
    throw new Error(
      `the ServiceMonitor's port ${String(endpoint.port)} does not reach the metrics port 8081`,
    );
  const meta = service.metadata as JsonObject;
  return {
    job_name: String(meta.name), // prometheus-operator's job label: the Service's name
    honor_labels: endpoint.honorLabels === true,
    metrics_path: endpoint.path ?? '/metrics',
    scheme: endpoint.scheme ?? 'http',
    scrape_interval: '1s',
    static_configs: [
      {
        targets: [`127.0.0.1:${port}`],
        // The target labels prometheus-operator adds to every series of a ServiceMonitor's endpoint.
        labels: {
          namespace: String(meta.namespace),
          service: String(meta.name),
          endpoint: String(endpoint.port),
          pod,
          container: String(container.name),
        },
      },
    ],
  };
}

/**
 * The scrape job kube-prometheus-stack has for the API server, as the kubeconfig's user: a token (an own control
 * plane) or a client certificate (start.sh's cluster, kind); its files go to dir.
 */
export function apiServerJob(cluster: E2eCluster, dir: string): JsonObject {
  const user = cluster.kubeConfig().getCurrentUser();
  const file = (name: string, text: string | Buffer) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
  const pem = (data?: string, path?: string) =>
    data ? Buffer.from(data, 'base64') : path ? readFileSync(path) : null;
  const ca = cluster.caCert();
  const tls: JsonObject = ca ? { ca_file: file('apiserver-ca.crt', ca) } : {};
  const job: JsonObject = {
    job_name: 'apiserver',
    scheme: 'https',
    scrape_interval: '1s',
    tls_config: tls,
    static_configs: [{ targets: [new URL(cluster.server).host] }],
  };
  const cert = pem(user?.certData, user?.certFile);
  const key = pem(user?.keyData, user?.keyFile);
  if (user?.token) job.authorization = { credentials_file: file('apiserver-token', user.token) };
  else if (cert && key) {
    tls.cert_file = file('apiserver-client.crt', cert);
    tls.key_file = file('apiserver-client.key', key);
  } else
    throw new Error("e2e: the kubeconfig's user has neither a token nor a client certificate for Prometheus");
  return job;
}

/** A running Prometheus server and its HTTP API. */
export class PrometheusServer {
  private constructor(
    private readonly process: ChildProcess,
    readonly url: string,
  ) {}

  /** Starts `bin` with the given scrape jobs and rule file, its data in dir; resolves once it is ready. */
  static async start(
    bin: string,
    dir: string,
    jobs: JsonObject[],
    rules: JsonObject,
  ): Promise<PrometheusServer> {
    writeFileSync(join(dir, 'alerts.yaml'), stringify(rules));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [join(dir, 'alerts.yaml')],
        scrape_configs: jobs,
      }),
    );
    const port = await freePort();
    const log = openSync(join(dir, 'prometheus.log'), 'a');
    const child = spawn(
      bin,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', log, log] },
    );
    const server = new PrometheusServer(child, `http://127.0.0.1:${port}`);
    const started = Date.now();
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(
          `prometheus exited ${child.exitCode}: ${readFileSync(join(dir, 'prometheus.log'), 'utf8')}`,
        );
      try {
        if ((await fetch(`${server.url}/-/ready`)).status === 200) return server;
      } catch {
        // not listening yet
      }
      if (Date.now() - started > 30_000) throw new Error('prometheus did not get ready within 30 s');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async api(path: string, query: Record<string, string> = {}): Promise<JsonObject> {
    const res = await fetch(`${this.url}/api/v1/${path}?${new URLSearchParams(query).toString()}`);
    const body = (await res.json()) as JsonObject;
    if (body.status !== 'success')
      throw new Error(`${path} ${JSON.stringify(query)}: ${JSON.stringify(body)}`);
    return body.data as JsonObject;
  }

  /** An instant query's result (series with labels and value); throws with Prometheus' error when it does not parse. */
  async query(expr: string): Promise<Array<{ metric: JsonObject; value: [number, string] }>> {
    const data = await this.api('query', { query: expr });
    return data.result as unknown as Array<{ metric: JsonObject; value: [number, string] }>;
  }

  /** The alerts pending or firing now. */
  async alerts(): Promise<Array<{ labels: Record<string, string>; state: string }>> {
    const data = await this.api('alerts');
    return (data.alerts as JsonObject[]).map((a) => ({
      labels: a.labels as Record<string, string>,
      state: String(a.state),
    }));
  }

  /** Every alerting rule loaded, with its health (ok: it evaluated without error) and last error. */
  async rules(): Promise<Array<{ name: string; health: string; lastError: string }>> {
    const data = await this.api('rules', { type: 'alert' });
    return (data.groups as JsonObject[]).flatMap((g) =>
      (g.rules as JsonObject[]).filter(isJsonObject).map((r) => ({
        name: String(r.name),
        health: String(r.health),
        lastError: String(r.lastError ?? ''),
      })),
    );
  }

  /** Stops the server and waits for it to exit. */
  async stop(): Promise<void> {
    if (this.process.exitCode !== null) return;
    const exited = new Promise((r) => this.process.once('exit', r));
    this.process.kill('SIGTERM');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
