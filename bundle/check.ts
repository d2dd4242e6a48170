import { JsonObject, JsonValue, isJsonObject } from '../util/json';
import { metadataOf } from '../util/meta';

// Checks a built bundle for mistakes that would otherwise only show in the cluster: the operator's webhook and
// metrics ports (flags, environment, declared container ports, probes, Services and scrape annotations) must agree,
// and the two must differ, or the operator cannot listen on both.

/** The operator's defaults (cli/operator.ts): --webhook-port 9443, --health-port 8081 (probes and /metrics). */
export const DEFAULT_WEBHOOK_PORT = 9443;
export const DEFAULT_METRICS_PORT = 8081;

interface OperatorPod {
  where: string;
  labels: JsonObject;
  container: JsonObject;
  webhook: number;
  metrics: number;
}

const objects = (v: JsonValue | undefined): JsonObject[] => (Array.isArray(v) ? v.filter(isJsonObject) : []);
const field = (v: JsonValue | undefined, key: string): JsonValue | undefined =>
  isJsonObject(v) ? v[key] : undefined;

function identity(r: JsonObject): string {
  const meta = metadataOf(r);
  const ns = typeof meta.namespace === 'string' ? `${meta.namespace}/` : '';
  return `${String(r.kind)} ${ns}${String(meta.name)}`;
}

// The value of `--flag N`, `--flag=N`, else of the environment variable, else the default; as the operator reads it.
function setting(
  container: JsonObject,
  flag: string,
  env: string,
  fallback: number,
  problems: string[],
): number {
  const args = (Array.isArray(container.args) ? container.args : []).map(String);
  let value: string | undefined;
  args.forEach((a, i) => {
    if (a === flag) value = args[i + 1];
    else if (a.startsWith(`${flag}=`)) value = a.slice(flag.length + 1);
  });
  value ??= objects(container.env).find((e) => e.name === env)?.value as string | undefined;
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > 65535) {
    problems.push(`${flag} (${env}) is "${value}", not a port number`);
    return fallback;
  }
  return Number(value);
}

function operatorPods(resources: readonly JsonObject[], problems: string[]): OperatorPod[] {
  const pods: OperatorPod[] = [];
  for (const r of resources.filter((x) => x.kind === 'Deployment')) {
    const template = field(field(r, 'spec'), 'template');
    for (const container of objects(field(field(template, 'spec'), 'containers'))) {
      if (!Array.isArray(container.args) || container.args[0] !== 'operator') continue;
      const where = `${identity(r)} container ${String(container.name)}`;
      const own: string[] = [];
      const webhook = setting(container, '--webhook-port', 'MODRULE_WEBHOOK_PORT', DEFAULT_WEBHOOK_PORT, own);
      const metrics = setting(container, '--health-port', 'MODRULE_HEALTH_PORT', DEFAULT_METRICS_PORT, own);
      problems.push(...own.map((p) => `${where}: ${p}`));
      const labels = field(field(template, 'metadata'), 'labels');
      pods.push({ where, labels: isJsonObject(labels) ? labels : {}, container, webhook, metrics });
    }
  }
  return pods;
}

// A container port by name or number, as a Service's targetPort or a probe's port names it.
function resolvePort(pod: OperatorPod, port: JsonValue | undefined): number | undefined {
  if (typeof port === 'number') return port;
  const named = objects(pod.container.ports).find((p) => p.name === port);
  return typeof named?.containerPort === 'number' ? named.containerPort : undefined;
}

function checkContainer(pod: OperatorPod, problems: string[]): void {
  const { where, webhook, metrics } = pod;
  if (webhook === metrics && webhook !== 0)
    problems.push(
      `${where}: the metrics port (--health-port) and the webhook port (--webhook-port) are both ${webhook}: ` +
        'the operator cannot serve both on one port; give them different ports',
    );
  const expected: Record<string, number> = { webhook, metrics };
  const seen = new Set<number>();
  for (const p of objects(pod.container.ports)) {
    const name = String(p.name);
    if (seen.has(Number(p.containerPort)))
      problems.push(`${where}: containerPort ${String(p.containerPort)} declared twice`);
    seen.add(Number(p.containerPort));
    if (name in expected && p.containerPort !== expected[name])
      problems.push(
        `${where}: container port "${name}" is ${String(p.containerPort)} but the operator listens on ${expected[name]}`,
      );
  }
  for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
    const httpGet = field(pod.container[probe], 'httpGet');
    if (httpGet === undefined) continue;
    if (resolvePort(pod, field(httpGet, 'port')) !== metrics)
      problems.push(
        `${where}: ${probe} must use the metrics port ${metrics} (it serves /healthz and /readyz)`,
      );
  }
}

function selects(service: JsonObject, pod: OperatorPod): boolean {
  const selector = field(field(service, 'spec'), 'selector');
  if (!isJsonObject(selector) || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => pod.labels[k] === v);
}

function checkService(service: JsonObject, pod: OperatorPod, problems: string[]): void {
  const where = identity(service);
  const served = new Set([pod.webhook, pod.metrics]);
  const ports = objects(field(field(service, 'spec'), 'ports'));
  for (const p of ports) {
    const target = resolvePort(pod, p.targetPort ?? p.port);
    if (target === undefined || !served.has(target))
      problems.push(
        `${where}: port ${String(p.name ?? p.port)} targets ${JSON.stringify(p.targetPort ?? p.port)}, ` +
          `which is neither the webhook port ${pod.webhook} nor the metrics port ${pod.metrics} of ${pod.where}`,
      );
  }
  const annotations = field(field(service, 'metadata'), 'annotations');
  const scrapePort = field(annotations, 'prometheus.io/port');
  if (scrapePort !== undefined && Number(scrapePort) !== pod.metrics)
    problems.push(
      `${where}: annotation prometheus.io/port is ${String(scrapePort)}, the metrics port is ${pod.metrics}`,
    );
}

/** Everything wrong with the operator's ports in `resources` (a built bundle); empty when all agree. */
export function checkBundle(resources: readonly JsonObject[]): string[] {
  const problems: string[] = [];
  const pods = operatorPods(resources, problems);
  for (const pod of pods) {
    checkContainer(pod, problems);
    for (const service of resources.filter((r) => r.kind === 'Service' && selects(r, pod)))
      checkService(service, pod, problems);
  }
  return problems;
}
