import { JsonObject } from '../util/json';
import { DEFAULT_CLUSTER_NAMESPACE, MODRULE_API_VERSION, MODRULE_KIND } from '../rule/types';
import { RuleStore } from '../store/rules';
import { ReferenceCaches } from '../operator/references/caches';
import { silentLogger } from '../util/logger';
import { auditObject } from '../audit/evaluate';
import { REPORT_FORMATS, ReportFormat } from '../audit/report';
import { ListableResource, ObjectAudit, resourceName } from '../audit/types';
import { ClusterAccess } from '../kube/access';
import { loadClusterAccess } from '../kube/credentials';
import { createKubeClient, isUnanswered, KubeApiError, KubeClient } from '../kube/kube';
import { NODES_PATH } from '../operator/rules/sync';
import { ApplyOptions, ApplyOutcome, bringInLine, Pool } from '../operator/audit/apply';
import { listAll, prepareScan } from '../operator/audit/prepare';
import { RateLimiter } from '../operator/audit/rate';
import { scanCluster } from '../operator/audit/scan';
import { loadRules } from './load';
import { reachOf, ruleNamed, ruleView } from './audit-rule';
import { AuditOutput, AuditSummary, auditOutput, progressLine } from './audit-output';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { CommandIO, UsageError } from './io';
import { MODRULES_PATH } from '../kube/owned';
import { messageOf } from '../util/errors';
import { metadataOf } from '../util/meta';

const USAGE = `usage: modrule audit [--rules PATH...] [--rule NAME] [-n NS] [-l SELECTOR] [-o text|json|report]
                     [--apply [--dry-run]]

What would the ModRules do to the objects that already exist? Lists, in a live cluster, the objects the rules
can reach (only the resources and namespaces they can reach, page by page) and evaluates each as the webhook
would for an UPDATE of it: would be patched (with the patch), would be rejected (with the message), failed, or
in line. Read-only unless --apply. Uses KUBECONFIG, else ~/.kube/config, else the pod's service account.

  --rules PATH|-        ModRule files or folders (as for apply; - reads standard input); repeatable;
                        default: the ModRules in the cluster
  --rule NAME           only what this rule (namespace/name, or a name only one rule has) does to the objects it
                        can reach, the other rules in force as they are; for a Warn/DryRun rule, what enforcing it
                        would change in place (its would-be patches and rejections). Not with --apply
  -n, --namespace NS    only objects in this namespace (and namespace of --rules files that name none)
  -l, --selector SEL    only objects with these labels (a label selector, e.g. app=web,tier!=batch)
  --cluster-namespace NS
                        namespace of cluster-wide ModRules (default "${DEFAULT_CLUSTER_NAMESPACE}")
  -o, --output FMT      text (default): one line per object that would change or failed, then totals;
                        json: {"objects": [...], "summary": {...}}; report: the reports the operator would
                        write (--report-format), as YAML for kubectl apply
  --report-format F     openreports (default: openreports.io/v1alpha1 Report) or wgpolicyk8s (PolicyReport)
  --apply               bring the objects in line: a server-side dry run, then a JSON patch guarded by the
                        object's resourceVersion (a conflict is read again and retried). Objects a Reject rule
                        would refuse are not touched. Uses your credentials: you need patch on those objects
  --dry-run             with --apply: only the server-side dry run; prints exactly what would be sent
  --qps N               requests per second to the API server, lists included (default 50)
  --concurrency N       objects patched at a time with --apply (default 4)
  --page-size N         objects per list request (default 500)
  --max-objects N       stop after listing this many objects (the result is then partial)
  -h, --help            show this help

${exitHelp(
  'something would be patched or rejected (with --apply: something is still not in line)',
  'a cluster that cannot be reached or refuses the credentials, or a partial result (a list RBAC forbids, the budget)',
)}`;

/** Test and embedding hooks: a client, or where the API server is, instead of the kubeconfig. */
export interface AuditHooks {
  client?: KubeClient;
  access?: ClusterAccess;
  env?: Record<string, string | undefined>;
}

interface Options {
  rules?: string[];
  rule?: string;
  namespace?: string;
  selector?: string;
  clusterNamespace: string;
  output: 'text' | 'json' | 'report';
  reportFormat: ReportFormat;
  apply: boolean;
  dryRun: boolean;
  qps: number;
  concurrency: number;
  pageSize: number;
  maxObjects?: number;
}

function positive(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !(n > 0))
    throw new UsageError(`${flag} must be a positive number, got "${value}"`);
  return n;
}

function parseOptions(args: string[]): Options | 'help' {
  const parsed = parseCommand(args, {
    options: {
      rules: { type: 'string', multiple: true },
      rule: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
      selector: { type: 'string', short: 'l' },
      'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
      output: { type: 'string', short: 'o', default: 'text' },
      'report-format': { type: 'string', default: 'openreports' },
      apply: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      qps: { type: 'string' },
      concurrency: { type: 'string' },
      'page-size': { type: 'string' },
      'max-objects': { type: 'string' },
    },
    usage: USAGE,
  });
  if (parsed === 'help') return 'help';
  const v = parsed.values;
  if (v.output !== 'text' && v.output !== 'json' && v.output !== 'report')
    throw new UsageError(`--output must be text, json or report, not "${v.output}"`);
  if (!REPORT_FORMATS.includes(v['report-format'] as ReportFormat))
    throw new UsageError(
      `--report-format must be ${REPORT_FORMATS.join(' or ')}, not "${v['report-format']}"`,
    );
  if (v['dry-run'] && !v.apply) throw new UsageError('--dry-run only makes sense with --apply');
  if (v.rule !== undefined && v.apply)
    throw new UsageError(
      '--rule shows what one rule would change; to change it in place, set the rule to Enforce and run --apply',
    );
  const whole = (value: string | undefined, flag: string) => {
    const n = positive(value, flag);
    if (n !== undefined && !Number.isInteger(n))
      throw new UsageError(`${flag} must be a whole number, got "${value}"`);
    return n;
  };
  return {
    rules: v.rules,
    rule: v.rule,
    namespace: v.namespace,
    selector: v.selector,
    clusterNamespace: v['cluster-namespace'],
    output: v.output,
    reportFormat: v['report-format'] as ReportFormat,
    apply: v.apply,
    dryRun: v['dry-run'],
    qps: positive(v.qps, '--qps') ?? 50,
    concurrency: whole(v.concurrency, '--concurrency') ?? 4,
    pageSize: whole(v['page-size'], '--page-size') ?? 500,
    maxObjects: whole(v['max-objects'], '--max-objects'),
  };
}

/** Loads the rules (files or cluster) and the Namespace and Node manifests they need into a store. */
async function loadStore(
  client: KubeClient,
  options: Options,
  limiter: RateLimiter,
  io: CommandIO,
): Promise<{ store: RuleStore; namespaceNames?: string[]; notes: string[] }> {
  const store = new RuleStore({ clusterNamespace: options.clusterNamespace, keepSource: false });
  const notes: string[] = [];
  if (options.rules) {
    await loadRules(store, options.rules, options.namespace ?? 'default', io);
  } else {
    const rules = await listAll(
      client,
      MODRULES_PATH,
      { apiVersion: MODRULE_API_VERSION, kind: MODRULE_KIND },
      { limiter },
    );
    for (const r of store.replaceRules(rules))
      notes.push(
        `ModRule ${r.namespace}/${r.name} is invalid and skipped (as the webhook skips it): ` +
          r.problems.map((p) => `${p.field}: ${p.message}`).join('; '),
      );
  }
  if (options.namespace === undefined) {
    const namespaces = await listAll(
      client,
      '/api/v1/namespaces',
      { apiVersion: 'v1', kind: 'Namespace' },
      { limiter },
    );
    store.replaceNamespaces(namespaces);
    return { store, namespaceNames: namespaces.map((n) => String(metadataOf(n).name)), notes };
  }
  try {
    await limiter.take();
    const ns = await client.request('GET', `/api/v1/namespaces/${encodeURIComponent(options.namespace)}`);
    store.upsertNamespace({ apiVersion: 'v1', kind: 'Namespace', ...ns });
  } catch (err) {
    if (!(err instanceof KubeApiError) || (err.status !== 403 && err.status !== 404)) throw err;
    notes.push(
      `cannot read Namespace ${options.namespace} (${err.message}): its labels (ignore label, ` +
        'targetNamespaceSelector) and syntheticRefs.namespace are evaluated as absent',
    );
  }
  return { store, notes };
}

/** Node manifests, for Pods that reference one (syntheticRefs.node); only when Pods are audited. */
async function loadNodes(
  client: KubeClient,
  store: RuleStore,
  limiter: RateLimiter,
  notes: string[],
): Promise<void> {
  try {
    store.replaceNodes(await listAll(client, NODES_PATH, { apiVersion: 'v1', kind: 'Node' }, { limiter }));
  } catch (err) {
    if (!(err instanceof KubeApiError) || err.status !== 403) throw err;
    notes.push(`cannot list Nodes (${err.message}): Pods are evaluated without syntheticRefs.node`);
  }
}

function unreachable(err: unknown, server: string): never {
  if (isUnanswered(err))
    throw new UsageError(`cannot reach the API server${server ? ` at ${server}` : ''}: ${err.message}`);
  if (err instanceof KubeApiError && (err.status === 401 || err.status === 403))
    throw new UsageError(`the API server refused the credentials: ${err.message}`);
  throw err;
}

/** What the scan does with each audited object: print it, and under --apply bring it in line; with the tallies. */
function applier(options: Options, out: AuditOutput, applyOptions: ApplyOptions) {
  const applied: Record<ApplyOutcome['status'], number> = {
    patched: 0,
    'dry-run': 0,
    'in-line': 0,
    rejected: 0,
    gone: 0,
    failed: 0,
  };
  let conflicts = 0;
  const pool = new Pool(options.concurrency);
  return {
    applied,
    conflicts: () => conflicts,
    drain: () => pool.drain(),
    async object(audit: ObjectAudit, resource: ListableResource): Promise<void> {
      if (!options.apply || audit.verdict === 'pass' || audit.verdict === 'error') return out.object(audit);
      if (audit.verdict === 'reject') {
        applied.rejected++;
        return out.object(audit, { status: 'rejected', message: audit.message, conflicts: 0 });
      }
      await pool.submit(async () => {
        const outcome = await bringInLine(audit, resource, applyOptions);
        applied[outcome.status]++;
        conflicts += outcome.conflicts;
        out.object(audit, outcome);
      });
    },
  };
}

/** modrule audit, with hooks for tests (a client instead of the kubeconfig). */
export async function runAudit(args: string[], io: CommandIO, hooks: AuditHooks = {}): Promise<number> {
  const options = parseOptions(args);
  if (options === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  let client = hooks.client;
  let server = '';
  if (!client) {
    try {
      const access = hooks.access ?? (await loadClusterAccess(hooks.env ?? process.env));
      server = access.server;
      client = createKubeClient(access);
    } catch (err) {
      throw new UsageError(`no usable Kubernetes configuration: ${messageOf(err)}`);
    }
  }
  const limiter = new RateLimiter(options.qps);
  const state = await loadStore(client, options, limiter, io).catch((err: unknown) =>
    unreachable(err, server),
  );
  // --rule: only what that rule can reach is listed, and only its results are shown (the others still run).
  const only = options.rule === undefined ? undefined : ruleNamed(state.store.allRules(), options.rule);
  const planned = only ? reachOf(state.store.snapshot(), only) : state.store.snapshot();
  const prepared = await prepareScan(client, planned, {
    namespace: options.namespace,
    namespaceNames: state.namespaceNames,
    limiter,
  }).catch((err: unknown) => unreachable(err, server));
  const notes = [...state.notes, ...prepared.notes];
  if (prepared.plan.targets.some((t) => t.resource.kind === 'Pod' && t.resource.group === ''))
    await loadNodes(client, state.store, limiter, notes);
  const snapshot = state.store.snapshot();
  for (const n of notes) io.stderr(`modrule audit: note: ${n}\n`);
  io.stderr(
    `modrule audit: ${snapshot.ruleCount} ModRules; listing ${prepared.plan.targets.map((t) => resourceName(t.resource)).join(', ') || 'nothing'}\n`,
  );

  // Rules that read other objects: the operator's reference caches, filled from this cluster for this run.
  const references = state.store.allRules().some((r) => r.references)
    ? new ReferenceCaches({ client, logger: silentLogger(), store: state.store })
    : undefined;
  references?.start();
  try {
    const out = auditOutput(io, options.output, options.reportFormat);
    const ruleVerdicts = { patch: 0, reject: 0, error: 0, pass: 0 };
    const applying = applier(options, out, {
      client,
      limiter,
      dryRun: options.dryRun,
      reaudit: (object: JsonObject, resource: ListableResource) =>
        auditObject(object, resource, { snapshot, references: references?.reader }),
    });
    const scan = await scanCluster(
      {
        client,
        snapshot,
        plan: prepared.plan,
        scope: prepared.scope,
        labelSelector: options.selector,
        pageSize: options.pageSize,
        limiter,
        maxObjects: options.maxObjects,
        references,
        onProgress: (p) => {
          if (p.elapsedMs >= 2000) io.stderr(progressLine(p));
        },
      },
      async (audit, resource) => {
        if (only) {
          const view = ruleView(audit, only);
          ruleVerdicts[view.verdict]++;
          return out.object(view);
        }
        return applying.object(audit, resource);
      },
    );
    await applying.drain();
    const problems = [...prepared.problems, ...scan.problems];
    const summary: AuditSummary = {
      scan: only ? { ...scan, verdicts: ruleVerdicts } : scan,
      problems,
      notes,
      resources: prepared.plan.targets.length,
      applied: options.apply ? applying.applied : undefined,
      conflicts: applying.conflicts(),
    };
    out.finish(summary);
    // A partial answer cannot say "nothing would change": it is an error, after everything it did find is printed.
    if (!scan.complete || problems.length > 0) return EXIT.error;
    const applied = applying.applied;
    const remaining = options.apply
      ? applied['dry-run'] + applied.rejected + applied.failed
      : summary.scan.verdicts.patch + summary.scan.verdicts.reject;
    return remaining > 0 ? EXIT.finding : EXIT.ok;
  } finally {
    await references?.stop();
  }
}

/** modrule audit. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  return runAudit(args, io);
}
