import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { annotationsOf, nameOf } from '../util/meta';
import { messageOf } from '../util/errors';
import { AdmissionInput, admit } from '../engine/admit';
import { explainAdmission } from '../engine/explain';
import { PATCHED_BY_ANNOTATION } from '../engine/record';
import { scopeOf } from '../engine/subject';
import {
  AdmissionOperation,
  DEFAULT_CLUSTER_NAMESPACE,
  MODRULE_API_VERSION,
  MODRULE_KIND,
  NODE_REF_ANNOTATION,
} from '../rule/types';
import { RuleStore } from '../store/rules';
import { apiVersionOf, ListableResource } from '../audit/types';
import { ClusterAccess } from '../kube/access';
import { loadClusterAccess } from '../kube/credentials';
import { createKubeClient, KubeApiError, KubeClient } from '../kube/kube';
import { discoverResources, objectPath } from '../operator/audit/discovery';
import { listAll } from '../operator/audit/prepare';
import { resolveResource } from '../operator/rules/resource-names';
import { rejectionMessage } from '../engine/rejection';
import { unenforcedSummary } from '../engine/unenforced';
import { loadRules } from './load';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { formatExplanation, palette, shortValue, wantColor } from './explain';
import { CommandIO, UsageError } from './io';
import { modRulesPath } from '../kube/owned';

const USAGE = `usage: modrule explain TYPE/NAME | TYPE NAME [-n NS] [--rules PATH...] [options]

Which ModRules would patch or reject a live object now, and why. The object is read from the cluster (KUBECONFIG,
else ~/.kube/config, else the pod's service account) with what the webhook would inject (its Namespace; for a Pod
the Node of its ref.kubemod.io/node annotation), and admitted offline as the webhook would admit it written again
as it is: every rule's part as "modrule apply --explain" gives it, then the verdict and the patch. Rules in Warn
or DryRun (spec.enforcementAction) say what enforcing them would do, and what their status recorded lately.

  TYPE/NAME, TYPE NAME  the object, as kubectl names it: deployment/web, deploy web, deployments.apps/web
  -n, --namespace NS    the object's namespace (default "default"; ignored for cluster-scoped objects)
  --rules PATH          ModRule files or folders instead of the cluster's ModRules (those of the object's namespace
                        and the cluster namespace); repeatable
  --operation OP        the admission explained: UPDATE (default: the object written again unchanged), CREATE,
                        or DELETE
  --cluster-namespace NS
                        namespace of cluster-wide ModRules (default "${DEFAULT_CLUSTER_NAMESPACE}")
  -o, --output text|json
                        text (default); json: {object, operation, verdict, patch, message, rules, failures,
                        unenforced, recorded, notes, explanation}
  -h, --help            show this help

${exitHelp('the object would be patched or rejected', 'a cluster that cannot be reached, an object that is not there')}`;

const OPERATIONS: readonly AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];

/** Test and embedding hooks: a client instead of the kubeconfig. */
export interface ExplainHooks {
  client?: KubeClient;
  access?: ClusterAccess;
  env?: Record<string, string | undefined>;
}

interface Options {
  type: string;
  name: string;
  namespace: string;
  rules?: string[];
  operation: AdmissionOperation;
  clusterNamespace: string;
  output: 'text' | 'json';
}

function parseOptions(args: string[]): Options | 'help' {
  const parsed = parseCommand(args, {
    options: {
      namespace: { type: 'string', short: 'n', default: 'default' },
      rules: { type: 'string', multiple: true },
      operation: { type: 'string', default: 'UPDATE' },
      'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
      output: { type: 'string', short: 'o', default: 'text' },
    },
    positionals: true,
    usage: USAGE,
  });
  if (parsed === 'help') return 'help';
  const v = parsed.values;
  const words = parsed.positionals;
  const [type, name] = words.length === 1 ? words[0].split(/\/(.*)/s) : words;
  if (words.length === 0 || words.length > 2 || !type || !name || (words.length === 2 && type.includes('/')))
    throw new UsageError(`name one object: TYPE/NAME or TYPE NAME (as kubectl get)\n\n${USAGE}`);
  const operation = v.operation.toUpperCase() as AdmissionOperation;
  if (!OPERATIONS.includes(operation)) throw new UsageError('--operation must be CREATE, UPDATE or DELETE');
  if (v.output !== 'text' && v.output !== 'json') throw new UsageError('--output must be text or json');
  return {
    type,
    name,
    namespace: v.namespace,
    rules: v.rules,
    operation,
    clusterNamespace: v['cluster-namespace'],
    output: v.output,
  };
}

// The API server's answers are input, not bugs: a message, never a stack trace.
function unreachable(err: unknown, server: string): never {
  if (!(err instanceof KubeApiError)) throw err;
  if (err.status === 0)
    throw new UsageError(`cannot reach the API server${server ? ` at ${server}` : ''}: ${err.message}`);
  if (err.status === 401) throw new UsageError(`the API server refused the credentials: ${err.message}`);
  throw new UsageError(`the API server answered: ${err.message}`);
}

/** GET, or undefined with a note when the object is not there or not readable. */
async function read(
  client: KubeClient,
  path: string,
  what: string,
  notes: string[],
): Promise<JsonObject | undefined> {
  try {
    return await client.request('GET', path);
  } catch (err) {
    if (!(err instanceof KubeApiError) || (err.status !== 403 && err.status !== 404)) throw err;
    notes.push(`cannot read ${what} (${err.message}): evaluated without it`);
    return undefined;
  }
}

/** The ModRules that can apply to an object of `namespace` (null: cluster-scoped), from the cluster or files. */
async function loadStore(
  client: KubeClient,
  o: Options,
  namespace: string | null,
  io: CommandIO,
  notes: string[],
): Promise<RuleStore> {
  const store = new RuleStore({ clusterNamespace: o.clusterNamespace, keepSource: false });
  if (o.rules) {
    await loadRules(store, o.rules, namespace ?? 'default', io);
    return store;
  }
  const rules: JsonObject[] = [];
  for (const ns of new Set([namespace ?? o.clusterNamespace, o.clusterNamespace])) {
    const path = modRulesPath(ns);
    try {
      rules.push(...(await listAll(client, path, { apiVersion: MODRULE_API_VERSION, kind: MODRULE_KIND })));
    } catch (err) {
      if (!(err instanceof KubeApiError) || err.status !== 403) throw err;
      notes.push(`cannot list the ModRules of namespace ${ns} (${err.message}): explained without them`);
    }
  }
  for (const r of store.replaceRules(rules))
    notes.push(
      `ModRule ${r.namespace}/${r.name} is invalid and skipped (as the webhook skips it): ` +
        r.problems.map((p) => `${p.field}: ${p.message}`).join('; '),
    );
  notes.push(...rules.flatMap(notEnforcedNote));
  return store;
}

/** What a Warn/DryRun rule's status records of the objects it would have changed (condition NotEnforced). */
function notEnforcedNote(rule: JsonObject): string[] {
  const status = isJsonObject(rule.status) ? rule.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isJsonObject) : [];
  const c = conditions.find((x) => x.type === 'NotEnforced' && x.status === 'True');
  const meta = isJsonObject(rule.metadata) ? rule.metadata : {};
  return c ? [`ModRule ${String(meta.namespace)}/${String(meta.name)}: ${String(c.message)}`] : [];
}

/** The live object as the webhook would get it (apiVersion and kind set), and its namespace (null: cluster-scoped). */
async function readObject(
  client: KubeClient,
  o: Options,
): Promise<{ object: JsonObject; namespace: string | null }> {
  let resource: ListableResource;
  try {
    resource = resolveResource((await discoverResources(client)).resources, o.type);
  } catch (err) {
    if (err instanceof KubeApiError) throw err;
    throw new UsageError(messageOf(err));
  }
  const namespace = resource.namespaced ? o.namespace : '';
  const live = await client.request('GET', objectPath(resource, namespace, o.name)).catch((err: unknown) => {
    if (err instanceof KubeApiError && err.status === 404)
      throw new UsageError(`${resource.kind} ${namespace ? `${namespace}/` : ''}${o.name} not found`);
    throw err;
  });
  return {
    object: { ...live, apiVersion: apiVersionOf(resource), kind: resource.kind },
    namespace: namespace || null,
  };
}

/** Puts into the store what the webhook injects: the object's Namespace, a Pod's Node (ref.kubemod.io/node). */
async function injectRefs(
  client: KubeClient,
  store: RuleStore,
  object: JsonObject,
  namespace: string | null,
  notes: string[],
) {
  if (namespace !== null) {
    const ns = await read(
      client,
      `/api/v1/namespaces/${encodeURIComponent(namespace)}`,
      `Namespace ${namespace}`,
      notes,
    );
    if (ns) store.upsertNamespace({ ...ns, apiVersion: 'v1', kind: 'Namespace' });
  }
  const node =
    object.kind === 'Pod' && object.apiVersion === 'v1'
      ? annotationsOf(object)[NODE_REF_ANNOTATION]
      : undefined;
  if (node) {
    const n = await read(client, `/api/v1/nodes/${encodeURIComponent(node)}`, `Node ${node}`, notes);
    if (n) store.upsertNode({ ...n, apiVersion: 'v1', kind: 'Node' });
  }
}

/** modrule explain, with hooks for tests (a client instead of the kubeconfig). */
export async function runExplain(args: string[], io: CommandIO, hooks: ExplainHooks = {}): Promise<number> {
  const o = parseOptions(args);
  if (o === 'help') {
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
  const notes: string[] = [];
  const k = client;
  const { object, namespace, store } = await (async () => {
    const read = await readObject(k, o);
    const rules = await loadStore(k, o, scopeOf(read.namespace, read.object), io, notes);
    await injectRefs(k, rules, read.object, read.namespace, notes);
    return { ...read, store: rules };
  })().catch((err: unknown) => unreachable(err, server));
  const input: AdmissionInput = {
    operation: o.operation,
    object: o.operation === 'DELETE' ? null : object,
    oldObject: o.operation === 'CREATE' ? null : object,
    namespace,
  };
  const snapshot = store.snapshot();
  const outcome = admit(input, snapshot);
  const scope = scopeOf(namespace, object);
  // Rules of other tenants cannot apply here: only those of the object's namespace and the cluster namespace.
  const near = store
    .allRules()
    .filter((r) => r.namespace === (scope ?? o.clusterNamespace) || r.namespace === o.clusterNamespace);
  const explanation = explainAdmission(input, snapshot, near);
  const verdict = !outcome.allowed
    ? 'reject'
    : outcome.patch.length > 0
      ? 'patch'
      : outcome.failures.length > 0
        ? 'error'
        : 'pass';
  const label = `${String(object.kind)} ${namespace ? `${namespace}/` : ''}${nameOf(object)}`;
  const recorded = annotationsOf(object)[PATCHED_BY_ANNOTATION];
  const result = {
    object: {
      apiVersion: String(object.apiVersion),
      kind: String(object.kind),
      namespace: namespace ?? '',
      name: nameOf(object),
    },
    operation: o.operation,
    verdict,
    patch: outcome.patch as unknown as JsonValue[],
    message: outcome.allowed ? '' : rejectionMessage(outcome.rejections),
    rules: outcome.matched.map((r) => `${r.namespace}/${r.name}`),
    failures: outcome.failures.map((f) => ({
      rule: `${f.rule.namespace}/${f.rule.name}`,
      message: f.message,
    })),
    unenforced: outcome.unenforced.map((u) => ({
      rule: `${u.rule.namespace}/${u.rule.name}`,
      mode: u.action,
      summary: unenforcedSummary(u),
    })),
    recorded: recorded ?? null,
    notes,
    explanation,
  };
  if (o.output === 'json') io.stdout(`${JSON.stringify(result, null, 2)}\n`);
  else {
    const p = palette(wantColor(io.stdoutIsTTY));
    for (const n of notes) io.stdout(`note: ${n}\n`);
    io.stdout(formatExplanation(label, explanation, p));
    if (recorded !== undefined) io.stdout(`recorded (${PATCHED_BY_ANNOTATION}): ${recorded}\n`);
    io.stdout(verdictText(result));
  }
  return verdict === 'patch' || verdict === 'reject' ? EXIT.finding : EXIT.ok;
}

function verdictText(r: {
  verdict: string;
  patch: JsonValue[];
  message: string;
  rules: string[];
  failures: Array<{ rule: string; message: string }>;
  unenforced: Array<{ rule: string; mode: string; summary: string }>;
}): string {
  const lines: string[] = [];
  for (const f of r.failures)
    lines.push(`${f.rule} would fail: ${f.message} (its changes dropped, as the webhook does)`);
  for (const u of r.unenforced) lines.push(`${u.rule} (${u.mode}, not enforced) ${u.summary}`);
  if (r.verdict === 'reject') lines.push(`would be rejected: ${r.message}`);
  else if (r.verdict === 'patch') {
    lines.push(`would be patched (matched: ${r.rules.join(', ')}):`);
    for (const op of r.patch.filter(isJsonObject))
      lines.push(
        `  ${String(op.op)} ${String(op.path)}${op.value === undefined ? '' : ` = ${shortValue(op.value)}`}`,
      );
  } else lines.push('nothing would change');
  return `${lines.join('\n')}\n`;
}

/** modrule explain. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  return runExplain(args, io);
}
