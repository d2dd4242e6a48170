import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createLogger, Logger, LogLevel } from '../util/logger';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { loadClusterAccess } from '../kube/credentials';
import { ClusterAccess } from '../kube/access';
import { SERVICE_ACCOUNT_DIR } from '../kube/incluster';
import { createKubeClient, KubeClient } from '../kube/kube';
import { NativeMode } from '../operator/native/controller';
import { CertMode, OperatorConfig, RunningOperator, startOperator } from '../operator/start';
import { REPORT_FORMATS, ReportFormat } from '../audit/report';
import { BackgroundAuditConfig } from '../operator/audit/background';
import { DEFAULT_OWNER_KINDS } from '../operator/references/owners';
import { budgetHelp, parseBudget } from './budget';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { CommandIO, UsageError } from './io';
import { messageOf } from '../util/errors';

const HELP = `usage: modrule operator [options]

Runs the operator in (or against) a cluster: watches ModRules, Namespaces and Nodes, serves the admission
webhooks, writes ModRule status, manages its certificates. Uses KUBECONFIG, else ~/.kube/config, else the pod's
service account (in a pod).

options (environment variable in brackets):
  --cluster-namespace NS   namespace of cluster-wide ModRules [MODRULE_CLUSTER_NAMESPACE] (default kubemod-system)
  --webhook-port N         HTTPS port of the webhooks [MODRULE_WEBHOOK_PORT] (default 9443)
  --health-port N          plain-HTTP /healthz, /readyz, /metrics [MODRULE_HEALTH_PORT] (default 8081)
  --cert-mode MODE         self: CA and certificate in Secret kubemod-webhook-server-cert, caBundle managed;
                           external: tls.crt/tls.key from --cert-dir (cert-manager) [MODRULE_CERT_MODE] (default self)
  --cert-extra-sans LIST   self mode: more names for the serving certificate, comma-separated DNS names and IPs,
                           e.g. 127.0.0.1,modrule.example.com (webhooks called by URL) [MODRULE_CERT_EXTRA_SANS]
  --cert-dir DIR           certificate folder for --cert-mode external [MODRULE_CERT_DIR]
                           (default /tmp/k8s-webhook-server/serving-certs)
  --log-level LEVEL        error|warn|info|debug [MODRULE_LOG_LEVEL] (default info)
  --dragnet-scope MODE     rules: the API server sends the dragnet only what the ModRules in force can act on;
                           wide: the net as installed, every write of every listed resource (KubeMod's behaviour)
                           [MODRULE_DRAGNET_SCOPE] (default rules)
  --reports FORMAT         off, openreports or wgpolicyk8s: audit existing objects in the background (after rule
                           changes and every --reports-interval) and keep one report per namespace [MODRULE_REPORTS]
                           (default off; needs the report CRDs and RBAC of config/reports, see docs/audit.md)
  --reports-interval S     seconds between full background audits [MODRULE_REPORTS_INTERVAL] (default 3600)
  --native-policies MODE   serve ModRules that fit as admission policies the API server runs (docs/native.md):
                           opt-in: rules annotated native.modrule.io/serve=true; all: every rule not annotated
                           "false"; off [MODRULE_NATIVE_POLICIES] (default opt-in)
  --record-patched-by      annotate every object a ModRule patches with the rules that patched it (modrule.io/patched-by;
                           docs/operator.md) [MODRULE_RECORD_PATCHED_BY=true] (default off: objects as KubeMod leaves them)
  --allow-secret-references
                           ModRules may reference Secrets (spec.references); a value read from one never
                           appears in a log line, warning, Event or report [MODRULE_ALLOW_SECRET_REFERENCES=true]
                           (default off; needs RBAC for secrets, see docs/references.md)
  --owner-kinds LIST       owner kinds followed for syntheticRefs.owner, comma-separated group/Kind (core: Kind)
                           [MODRULE_OWNER_KINDS] (default ${DEFAULT_OWNER_KINDS.join(',')})
${budgetHelp(true, 27)}
The operator's own namespace comes from POD_NAMESPACE (downward API), else the service account's namespace,
else the cluster namespace. SIGTERM or SIGINT stops it gracefully (exit 0).

${exitHelp()}`;

const LOG_LEVELS: readonly string[] = ['error', 'warn', 'info', 'debug'];
const NATIVE_MODES: readonly string[] = ['off', 'opt-in', 'all'];
const SERVICE_ACCOUNT_NAMESPACE = join(SERVICE_ACCOUNT_DIR, 'namespace');
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_NAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Everything `modrule operator` runs with. */
export interface OperatorOptions extends OperatorConfig {
  logLevel: LogLevel;
}

type Env = Record<string, string | undefined>;

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535)
    throw new UsageError(`${flag} must be a port number (0-65535), got "${value}"`);
  return n;
}

function namespaceName(value: string, what: string): string {
  if (!NAME.test(value) || value.length > 63)
    throw new UsageError(`${what} "${value}" is not a valid namespace name`);
  return value;
}

/** Comma-separated DNS names (RFC 1123, optionally `*.`-prefixed) and IP addresses; throws on anything else. */
function sanList(value: string, where: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    // A last label of digits only is a mistyped IP (no top-level domain is numeric).
    const dns = DNS_NAME.test(name) && name.length <= 253 && !/(^|\.)\d+$/.test(name);
    if (!isIP(name) && !dns)
      throw new UsageError(`${where}: "${name}" is neither a DNS name nor an IP address`);
  }
  return names;
}

function serviceAccountNamespace(): string | undefined {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** --reports and --reports-interval: undefined when off. */
function reportsConfig(
  format: string,
  where: string,
  interval: string,
  intervalWhere: string,
): BackgroundAuditConfig | undefined {
  if (format === 'off') return undefined;
  if (!(REPORT_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`${where} must be off, ${REPORT_FORMATS.join(' or ')}, got "${format}"`);
  const seconds = Number(interval);
  if (!/^\d+$/.test(interval) || seconds < 1)
    throw new UsageError(`${intervalWhere} must be a whole number of seconds, got "${interval}"`);
  return { format: format as ReportFormat, intervalSeconds: seconds };
}

/** Parses flags, falling back to the environment, then defaults; throws UsageError. */
export function parseOperatorArgs(
  args: string[],
  env: Env = process.env,
  fallbackNamespace: () => string | undefined = serviceAccountNamespace,
): OperatorOptions | 'help' {
  const parsed = parseCommand(args, {
    options: {
      'cluster-namespace': { type: 'string' },
      'webhook-port': { type: 'string' },
      'health-port': { type: 'string' },
      'cert-mode': { type: 'string' },
      'cert-dir': { type: 'string' },
      'cert-extra-sans': { type: 'string' },
      'log-level': { type: 'string' },
      'native-policies': { type: 'string' },
      'dragnet-scope': { type: 'string' },
      'request-budget-ms': { type: 'string' },
      'request-budget-steps': { type: 'string' },
      reports: { type: 'string' },
      'reports-interval': { type: 'string' },
      'record-patched-by': { type: 'boolean' },
      'allow-secret-references': { type: 'boolean' },
      'owner-kinds': { type: 'string' },
    },
    usage: HELP,
  });
  if (parsed === 'help') return 'help';
  const v = parsed.values;
  const pick = (flag: keyof typeof v, envName: string, fallback: string): [string, string] => {
    const fromFlag = v[flag];
    if (typeof fromFlag === 'string') return [fromFlag, `--${flag}`];
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv !== '') return [fromEnv, envName];
    return [fallback, `--${flag}`];
  };
  const [clusterNs, clusterWhere] = pick(
    'cluster-namespace',
    'MODRULE_CLUSTER_NAMESPACE',
    DEFAULT_CLUSTER_NAMESPACE,
  );
  const [webhookPort, webhookWhere] = pick('webhook-port', 'MODRULE_WEBHOOK_PORT', '9443');
  const [healthPort, healthWhere] = pick('health-port', 'MODRULE_HEALTH_PORT', '8081');
  const [certMode, certModeWhere] = pick('cert-mode', 'MODRULE_CERT_MODE', 'self');
  const [certDir] = pick('cert-dir', 'MODRULE_CERT_DIR', '/tmp/k8s-webhook-server/serving-certs');
  const [logLevel, logWhere] = pick('log-level', 'MODRULE_LOG_LEVEL', 'info');
  const [extraSans, extraSansWhere] = pick('cert-extra-sans', 'MODRULE_CERT_EXTRA_SANS', '');
  const [nativePolicies, nativeWhere] = pick('native-policies', 'MODRULE_NATIVE_POLICIES', 'opt-in');
  if (!NATIVE_MODES.includes(nativePolicies))
    throw new UsageError(`${nativeWhere} must be one of ${NATIVE_MODES.join(', ')}, got "${nativePolicies}"`);
  if (certMode !== 'self' && certMode !== 'external') {
    throw new UsageError(`${certModeWhere} must be "self" or "external", got "${certMode}"`);
  }
  if (!LOG_LEVELS.includes(logLevel))
    throw new UsageError(`${logWhere} must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const [dragnetScope, dragnetScopeWhere] = pick('dragnet-scope', 'MODRULE_DRAGNET_SCOPE', 'rules');
  if (dragnetScope !== 'rules' && dragnetScope !== 'wide')
    throw new UsageError(`${dragnetScopeWhere} must be "rules" or "wide", got "${dragnetScope}"`);
  const extraHosts = sanList(extraSans, extraSansWhere);
  if (extraHosts.length > 0 && certMode !== 'self')
    throw new UsageError(`${extraSansWhere} only applies to --cert-mode self`);
  const [budgetMs, budgetMsWhere] = pick('request-budget-ms', 'MODRULE_REQUEST_BUDGET_MS', '');
  const [budgetSteps, budgetStepsWhere] = pick('request-budget-steps', 'MODRULE_REQUEST_BUDGET_STEPS', '');
  const budget = parseBudget(
    { value: budgetMs || undefined, where: budgetMsWhere },
    { value: budgetSteps || undefined, where: budgetStepsWhere },
  );
  const [reports, reportsWhere] = pick('reports', 'MODRULE_REPORTS', 'off');
  const [reportsInterval, reportsIntervalWhere] = pick(
    'reports-interval',
    'MODRULE_REPORTS_INTERVAL',
    '3600',
  );
  const [ownerKinds, ownerKindsWhere] = pick(
    'owner-kinds',
    'MODRULE_OWNER_KINDS',
    DEFAULT_OWNER_KINDS.join(','),
  );
  const allowSecrets =
    v['allow-secret-references'] === true || env.MODRULE_ALLOW_SECRET_REFERENCES === 'true';
  const clusterNamespace = namespaceName(clusterNs, clusterWhere);
  const podNs = env.POD_NAMESPACE || fallbackNamespace() || clusterNamespace;
  return {
    clusterNamespace,
    podNamespace: namespaceName(podNs, 'POD_NAMESPACE'),
    // The downward API's status.podIP: this replica is not its own peer (docs/operator.md, "Several replicas").
    ...(env.POD_IP ? { podIp: env.POD_IP } : {}),
    webhookPort: port(webhookPort, webhookWhere),
    healthPort: port(healthPort, healthWhere),
    certMode: certMode as CertMode,
    certDir,
    extraHosts,
    logLevel: logLevel as LogLevel,
    budget,
    nativePolicies: nativePolicies as NativeMode,
    dragnetScope,
    reports: reportsConfig(reports, reportsWhere, reportsInterval, reportsIntervalWhere),
    recordPatchedBy: v['record-patched-by'] ?? envBoolean(env, 'MODRULE_RECORD_PATCHED_BY'),
    references: { allowSecrets, ownerKinds: kindList(ownerKinds, ownerKindsWhere) },
  };
}

/** A boolean environment variable: true or false (any case), unset or empty for false; throws UsageError. */
function envBoolean(env: Env, name: string): boolean {
  const value = (env[name] ?? '').toLowerCase();
  if (value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw new UsageError(`${name} must be true or false, got "${env[name]}"`);
}

/** group/Kind list (core kinds without a group); throws on anything else. */
function kindList(value: string, where: string): string[] {
  const kinds = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const k of kinds) {
    if (!/^(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Z][A-Za-z0-9]*$/.test(k))
      throw new UsageError(
        `${where}: "${k}" is not group/Kind (e.g. apps/ReplicaSet, or Kind for the core group)`,
      );
    if (k === 'Secret') throw new UsageError(`${where}: Secrets are never followed as owners`);
  }
  return kinds;
}

/** Test and embedding hooks for runOperator. */
export interface RunHooks {
  client?: KubeClient;
  logger?: Logger;
  /** Stops the operator instead of SIGTERM/SIGINT. */
  signal?: AbortSignal;
  onStarted?: (operator: RunningOperator) => void;
  /** Overrides for the parsed options (e.g. a loopback host in tests). */
  config?: Partial<OperatorConfig>;
}

/** Runs the operator until SIGTERM/SIGINT (or hooks.signal): then drains requests, stops watching, returns 0. */
export async function runOperator(args: string[], io: CommandIO, hooks: RunHooks = {}): Promise<number> {
  const options = parseOperatorArgs(args);
  if (options === 'help') {
    io.stdout(HELP);
    return EXIT.ok;
  }
  const logger = hooks.logger ?? createLogger(options.logLevel);
  let client = hooks.client;
  let access: ClusterAccess | undefined;
  if (!client) {
    try {
      access = await loadClusterAccess();
      client = createKubeClient(access);
    } catch (err) {
      throw new UsageError(
        `no usable Kubernetes configuration (in-cluster or KUBECONFIG): ${messageOf(err)}`,
      );
    }
  }
  const stopRequested = new AbortController();
  const onSignal = (sig: string) => {
    logger.info('shutting down', { signal: sig });
    stopRequested.abort();
  };
  const sigterm = () => onSignal('SIGTERM');
  const sigint = () => onSignal('SIGINT');
  process.once('SIGTERM', sigterm);
  process.once('SIGINT', sigint);
  hooks.signal?.addEventListener('abort', () => stopRequested.abort(), { once: true });
  if (hooks.signal?.aborted) stopRequested.abort();
  try {
    // Five seconds of unready-but-serving after SIGTERM lets endpoint removal reach the API servers first.
    const config: OperatorConfig = { shutdownDelayMs: 5000, ...options, ...hooks.config };
    const operator = await startOperator(config, { client, access, logger, signal: stopRequested.signal });
    hooks.onStarted?.(operator);
    await new Promise<void>((resolve) => {
      if (stopRequested.signal.aborted) resolve();
      else stopRequested.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await operator.stop();
    return EXIT.ok;
  } catch (err) {
    if (stopRequested.signal.aborted) return EXIT.ok; // stopped while still starting up
    throw err;
  } finally {
    process.off('SIGTERM', sigterm);
    process.off('SIGINT', sigint);
  }
}

/** modrule operator. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  return runOperator(args, io);
}
