import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { createLogger, Logger, LogLevel } from '../util/logger';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { RuleStore } from '../store/rules';
import { generateCertificates } from '../webhook/certs';
import { LoadReport, LocalRuleSource } from '../store/local/source';
import { RunningWebhook, startWebhookServer, WEBHOOK_PATHS } from '../webhook/server';
import { FileTlsSource, MemoryTlsSource, TlsSource } from '../webhook/tls';
import { BudgetLimits } from '../util/budget';
import { budgetHelp, parseBudget } from './budget';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { allowSecretsHelp } from './cluster';
import { ReferenceObjects, readySource } from '../store/references';
import { CommandIO, STDIN, UsageError } from './io';
import { messageOf } from '../util/errors';

const HELP = `usage: modrule serve --local [PATH...] [options]

Runs the admission webhook with ModRules, Namespaces, Nodes and the objects rules read (owners,
spec.references) from YAML files and folders (recursive, multi-document) instead of a cluster, and
reloads them when they change. Without PATHs it serves the bundled examples/local/.

options:
  --local                    required: take rules from files (the in-cluster server is "modrule operator")
  --port N                   HTTPS port (default 9443; 0 = any free port)
  --health-port N            plain-HTTP port for /healthz, /readyz, /metrics (default 8081; 0 = any)
  --host ADDR                interface to listen on (default 127.0.0.1)
  --cluster-namespace NS     namespace of cluster-wide ModRules (default kubemod-system)
  --cert FILE --key FILE     serving certificate and key (reloaded when they change);
                             default: a generated CA and certificate for localhost, 127.0.0.1, ::1
  --cert-dir DIR             where generated ca.crt, tls.crt, tls.key go (default a new temp folder, removed
                             when the server stops)
  --log-level LEVEL          error|warn|info|debug (default info)
  --record-patched-by        annotate patched objects with the rules that patched them (modrule.io/patched-by)
${allowSecretsHelp(29)}
${budgetHelp(false, 29)}
SIGTERM or SIGINT (Ctrl-C) stops it: in-flight requests finish (at most 10 s), then it exits 0.
${exitHelp()}`;

const LOG_LEVELS: readonly string[] = ['error', 'warn', 'info', 'debug'];

/** The options `serve --local` runs with. */
export interface ServeOptions {
  paths: string[];
  port: number;
  healthPort: number;
  host: string;
  clusterNamespace: string;
  logLevel: LogLevel;
  cert?: string;
  key?: string;
  certDir?: string;
  /** Rules may reference Secrets. */
  allowSecretReferences: boolean;
  /** Work and time one dragnet request may use. */
  budget: BudgetLimits;
  /** Annotate patched objects with the rules that patched them (engine/record.ts). */
  recordPatchedBy?: boolean;
}

function port(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535)
    throw new UsageError(`${flag} must be a port number (0-65535), got "${value}"`);
  return n;
}

/** The package root (holds package.json), found from this file in cli/ or dist/cli/. */
export function packageRoot(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'examples', 'local'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the modrule package root above ${from}`);
    dir = up;
  }
}

/** Parses `serve` arguments; throws UsageError. */
export function parseServeArgs(args: string[]): ServeOptions | 'help' {
  const parsed = parseCommand(args, {
    options: {
      local: { type: 'boolean' },
      port: { type: 'string' },
      'health-port': { type: 'string' },
      host: { type: 'string' },
      'cluster-namespace': { type: 'string' },
      'log-level': { type: 'string' },
      cert: { type: 'string' },
      key: { type: 'string' },
      'cert-dir': { type: 'string' },
      'allow-secret-references': { type: 'boolean' },
      'request-budget-ms': { type: 'string' },
      'request-budget-steps': { type: 'string' },
      'record-patched-by': { type: 'boolean' },
    },
    positionals: true,
    usage: HELP,
  });
  if (parsed === 'help') return 'help';
  const v = parsed.values;
  if (parsed.positionals.includes(STDIN))
    throw new UsageError(
      'serve --local watches its rule files and reloads them: it cannot read them from standard input ("-")',
    );
  if (!v.local) {
    throw new UsageError(`only --local is supported (run "modrule operator" in a cluster)\n\n${HELP}`);
  }
  const logLevel = v['log-level'] ?? 'info';
  if (!LOG_LEVELS.includes(logLevel))
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  if (Boolean(v.cert) !== Boolean(v.key)) throw new UsageError('--cert and --key go together');
  const clusterNamespace = v['cluster-namespace'] ?? DEFAULT_CLUSTER_NAMESPACE;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(clusterNamespace) || clusterNamespace.length > 63) {
    throw new UsageError(`--cluster-namespace "${clusterNamespace}" is not a valid namespace name`);
  }
  return {
    paths: parsed.positionals.length > 0 ? parsed.positionals : [join(packageRoot(), 'examples', 'local')],
    port: port(v.port, '--port', 9443),
    healthPort: port(v['health-port'], '--health-port', 8081),
    host: v.host ?? '127.0.0.1',
    clusterNamespace,
    logLevel: logLevel as LogLevel,
    cert: v.cert,
    key: v.key,
    certDir: v['cert-dir'],
    allowSecretReferences: v['allow-secret-references'] === true,
    budget: parseBudget(
      { value: v['request-budget-ms'], where: '--request-budget-ms' },
      { value: v['request-budget-steps'], where: '--request-budget-steps' },
    ),
    recordPatchedBy: v['record-patched-by'] ?? false,
  };
}

/** A running `serve --local`. */
export interface LocalServer {
  readonly webhook: RunningWebhook;
  readonly source: LocalRuleSource;
  readonly store: RuleStore;
  /** The CA bundle file clients should trust (the generated CA, or --cert when given). */
  readonly caFile: string;
  readonly firstLoad: LoadReport;
  close(): Promise<void>;
}

async function tlsFor(
  options: ServeOptions,
  logger: Logger,
): Promise<{ tls: TlsSource; caFile: string; caPem: string | null; ownDir?: string }> {
  if (options.cert && options.key) {
    const tls = await FileTlsSource.open({ certFile: options.cert, keyFile: options.key, logger }).catch(
      (err: Error) => {
        throw new UsageError(`cannot use --cert/--key: ${err.message}`);
      },
    );
    return { tls, caFile: options.cert, caPem: null };
  }
  const hosts = ['localhost', '127.0.0.1', '::1'];
  if (!['0.0.0.0', '::', ...hosts].includes(options.host)) hosts.push(options.host);
  const generated = generateCertificates({ hosts, caName: 'modrule serve --local CA' });
  // A folder of its own unless --cert-dir names one: removed when the server stops (the key in it is a secret).
  const ownDir = options.certDir === undefined ? await mkdtemp(join(tmpdir(), 'modrule-serve-')) : undefined;
  const dir = ownDir ?? options.certDir!;
  await mkdir(dir, { recursive: true });
  const caFile = join(dir, 'ca.crt');
  await writeFile(caFile, generated.caCert);
  await writeFile(join(dir, 'tls.crt'), generated.cert);
  await writeFile(join(dir, 'tls.key'), generated.key, { mode: 0o600 });
  return {
    tls: new MemoryTlsSource({ cert: generated.cert, key: generated.key }),
    caFile,
    caPem: generated.caCert,
    ...(ownDir ? { ownDir } : {}),
  };
}

function banner(server: LocalServer, options: ServeOptions, caPem: string | null): string {
  const url = server.webhook.url;
  const cwd = process.cwd();
  const show = (p: string) => (relative(cwd, p).startsWith('..') ? p : relative(cwd, p) || '.');
  const reviews = join(packageRoot(), 'examples', 'local', 'reviews');
  const r = server.firstLoad;
  const lines = [
    `modrule webhook listening on ${url}`,
    `  health and metrics: ${server.webhook.healthUrl}/healthz  /readyz  /metrics`,
    `  rules from ${options.paths.map(show).join(', ')}: ${r.rules} ModRules, ${r.namespaces} Namespaces, ${r.nodes} Nodes` +
      (r.errors.length ? ` (${r.errors.length} problems, see log)` : ''),
    `  CA bundle: ${server.caFile}`,
    '',
    'Try it:',
    `  curl --cacert ${server.caFile} -H 'Content-Type: application/json' \\`,
    `    ${url}${WEBHOOK_PATHS.dragnet} -d @${show(join(reviews, 'deployment-create.json'))}`,
    `  curl --cacert ${server.caFile} -H 'Content-Type: application/json' \\`,
    `    ${url}${WEBHOOK_PATHS.dragnet} -d @${show(join(reviews, 'service-create-external-ips.json'))}`,
    '',
  ];
  if (caPem) {
    lines.push(
      "clientConfig for a test cluster's MutatingWebhookConfiguration (the API server must reach this address):",
      '  clientConfig:',
      `    url: ${url}${WEBHOOK_PATHS.dragnet}`,
      `    caBundle: ${Buffer.from(caPem, 'utf8').toString('base64')}`,
      '',
    );
  }
  lines.push('Edit the rule files and they reload; Ctrl-C stops.', '');
  return lines.join('\n');
}

/** Starts `serve --local` in-process and returns once the first load is done and the server listens. */
export async function startLocalServer(
  args: string[],
  io: CommandIO,
  overrides: { logger?: Logger; pollMs?: number; debounceMs?: number } = {},
): Promise<LocalServer | null> {
  const options = parseServeArgs(args);
  if (options === 'help') {
    io.stdout(HELP);
    return null;
  }
  const paths = options.paths.map((p) => resolve(p));
  for (const p of paths) if (!existsSync(p)) throw new UsageError(`no such file or folder: ${p}`);
  const logger = overrides.logger ?? createLogger(options.logLevel);
  const store = new RuleStore({
    clusterNamespace: options.clusterNamespace,
    keepSource: false,
    references: { allowSecrets: options.allowSecretReferences },
  });
  const references = new ReferenceObjects();
  const source = new LocalRuleSource({
    paths,
    store,
    references,
    logger,
    pollMs: overrides.pollMs,
    debounceMs: overrides.debounceMs,
  });
  const { tls, caFile, caPem, ownDir } = await tlsFor(options, logger);
  const release = async (): Promise<void> => {
    tls.close();
    if (ownDir) await rm(ownDir, { recursive: true, force: true });
  };
  let ready = false;
  // The port is taken before the (possibly long) first load, so a port in use fails at once; dragnet requests
  // arriving meanwhile wait for the rules instead of being answered from an empty store.
  let loaded: () => void = () => undefined;
  const rulesLoaded = new Promise<void>((resolve) => (loaded = resolve));
  let webhook: RunningWebhook;
  try {
    webhook = await startWebhookServer(
      {
        tls,
        port: options.port,
        host: options.host,
        healthPort: options.healthPort,
        logger,
        isReady: () => ready,
      },
      {
        store,
        rulesLoaded,
        budget: options.budget,
        recordPatchedBy: options.recordPatchedBy,
        // Loaded with the rules, before the first request is answered: nothing to wait for.
        references: readySource(references),
      },
    );
  } catch (err) {
    await release();
    throw new UsageError(`cannot listen: ${messageOf(err)}`);
  }
  let firstLoad: LoadReport;
  try {
    firstLoad = await source.reload();
  } catch (err) {
    await webhook.close();
    await release();
    throw err;
  }
  loaded();
  source.watch();
  ready = true;
  let closing: Promise<void> | null = null;
  const server: LocalServer = {
    webhook,
    source,
    store,
    caFile,
    firstLoad,
    close: () => {
      closing ??= (async () => {
        source.close();
        await webhook.close();
        await release();
      })();
      return closing;
    },
  };
  io.stdout(banner(server, { ...options, paths }, caPem));
  return server;
}

/** modrule serve --local [PATH...]: runs until SIGINT/SIGTERM, then closes gracefully. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  const server = await startLocalServer(args, io);
  if (!server) return EXIT.ok;
  // The handlers stay until the server is closed: under `npm start`, Ctrl-C reaches this process twice (from the
  // terminal, and forwarded by npm), and a second SIGINT with no handler would kill it in the middle of draining.
  // Closing is bounded (the webhook cuts connections after 10 s), so ignoring repeats cannot hang it.
  let stopping = false;
  let removeHandlers = (): void => undefined;
  await new Promise<void>((done, fail) => {
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      io.stderr(`received ${signal}, finishing in-flight requests...\n`);
      server.close().then(done, fail);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    removeHandlers = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    };
  }).finally(() => removeHandlers());
  return EXIT.ok;
}
