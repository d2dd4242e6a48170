import { stringifyManifests } from '../util/yaml';
import { admit, AdmissionOutcome } from '../engine/admit';
import { AdmissionExplanation, explainAdmission } from '../engine/explain';
import { unenforcedSummary } from '../engine/unenforced';
import { JsonObject, JsonValue } from '../util/json';
import { AdmissionOperation, DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { RuleStore } from '../store/rules';
import { warnDuplicateKeys } from './duplicates';
import { CLUSTER_SCOPED_KINDS } from '../rule/kinds';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { allowSecretsHelp, standInCluster } from './cluster';
import { formatExplanation, palette } from './explain';
import { CommandIO, fileOrStdin, UsageError } from './io';
import { loadPaths, loadRules } from './load';
import {
  admissionInput,
  identity,
  nameOf,
  restoreNamespace,
  resultObject,
  scope,
  withNamespace,
} from './objects';

const USAGE = `usage: modrule apply --rules PATH... [--file PATH|-] [options]

Runs ModRules offline: manifests in, patched manifests out (ready for kubectl apply -f -).
Without --file, manifests are read from standard input (so it works as a Helm post-renderer).

  --rules PATH          ModRule files or folders (recursive .yaml/.yml/.json, multi-document); repeatable
  -f, --file PATH|-     objects to admit (multi-document YAML/JSON or kind: List); - or no --file reads
                        standard input
  --cluster PATH        objects standing in for the cluster: Namespaces, Nodes (syntheticRefs.namespace/node),
                        owners (syntheticRefs.owner) and objects rules reference (spec.references); repeatable
  --operation OP        CREATE (default), UPDATE or DELETE (--file then holds the objects being deleted)
  --old PATH            previous versions of the objects for UPDATE (matched by kind/namespace/name); repeatable
  --namespace NS        namespace for ModRules and namespaced objects that name none (default "default")
  --cluster-namespace NS
                        namespace of cluster-wide ModRules (default "${DEFAULT_CLUSTER_NAMESPACE}")
  -o, --output yaml|json
                        yaml (default): admitted objects as a YAML stream; json: one array with every verdict
                        (rules that failed at run time in "failures")
  --explain             why each rule did or did not match: on stderr (yaml), or an "explanation" per verdict (json)
  --record-patched-by   annotate each patched object with the rules that patched it (modrule.io/patched-by), as
                        the operator does with --record-patched-by
${allowSecretsHelp(24)}
  -h, --help            show this help

${exitHelp('at least one object rejected')}`;

/** Kinds the API server stores without a namespace (objects of other kinds take --namespace). */
export { CLUSTER_SCOPED_KINDS };

const OPERATIONS: readonly AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];

/** One element of `--output json`. */
export interface ApplyVerdict {
  kind: string;
  namespace: string | null;
  name: string;
  allowed: boolean;
  message: string | null;
  patch: JsonValue[];
  object: JsonObject;
  rules: string[];
  /** ModRules that failed at run time on this object (skipped, as the webhook does), with why. */
  failures: { rule: string; message: string }[];
  /** With --explain: every rule's part. */
  explanation?: AdmissionExplanation;
}

/** modrule apply: runs ModRules against manifests without a cluster. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommand(args, {
    options: {
      rules: { type: 'string', multiple: true },
      file: { type: 'string', short: 'f' },
      cluster: { type: 'string', multiple: true },
      operation: { type: 'string', default: 'CREATE' },
      old: { type: 'string', multiple: true },
      namespace: { type: 'string', default: 'default' },
      'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
      output: { type: 'string', short: 'o', default: 'yaml' },
      explain: { type: 'boolean', default: false },
      'record-patched-by': { type: 'boolean', default: false },
      'allow-secret-references': { type: 'boolean', default: false },
    },
    usage: USAGE,
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const opts = parsed.values;
  if (!opts.rules || opts.rules.length === 0) throw new UsageError(`--rules is required\n\n${USAGE}`);
  // Helm runs post-renderers with the manifests on stdin and no file argument.
  const file = fileOrStdin(opts.file, io);
  const operation = opts.operation.toUpperCase() as AdmissionOperation;
  if (!OPERATIONS.includes(operation)) throw new UsageError(`--operation must be CREATE, UPDATE or DELETE`);
  if (opts.output !== 'yaml' && opts.output !== 'json') throw new UsageError(`--output must be yaml or json`);
  if (opts.old && operation !== 'UPDATE')
    throw new UsageError(`--old only makes sense with --operation UPDATE`);
  const defaultNamespace = opts.namespace;

  const store = new RuleStore({
    clusterNamespace: opts['cluster-namespace'],
    references: { allowSecrets: opts['allow-secret-references'] },
  });
  await loadRules(store, opts.rules, defaultNamespace, io);
  const clusterFiles = await loadPaths(opts.cluster ?? [], io);
  warnDuplicateKeys(clusterFiles, io);
  const cluster = clusterFiles.map((l) => l.object);
  const references = standInCluster(store, cluster, defaultNamespace);

  const olds = new Map<string, JsonObject>();
  const oldObjects = await loadPaths(opts.old ?? [], io);
  warnDuplicateKeys(oldObjects, io);
  for (const { object } of oldObjects) olds.set(identity(object, scope(object, defaultNamespace)), object);

  const inputs = await loadPaths([file], io);
  warnDuplicateKeys(inputs, io);
  const snapshot = store.snapshot();
  const compiled = opts.explain ? store.allRules() : [];
  const verdicts: ApplyVerdict[] = [];
  const admitted: JsonObject[] = [];
  let rejected = false;

  for (const { object } of inputs) {
    const namespace = scope(object, defaultNamespace);
    // The API server fills metadata.namespace before admission; do the same, then take it back out if nothing set it.
    const subject = withNamespace(object, namespace);
    const input = admissionInput(
      operation,
      subject,
      olds.get(identity(object, namespace)) ?? null,
      namespace,
    );
    // Offline, on the user's own files: messages of rules reading Secrets are shown.
    const outcome = admit(input, snapshot, undefined, {
      references,
      withholdSecrets: false,
      recordPatchedBy: opts['record-patched-by'],
    });
    const label = `${String(object.kind ?? '<no kind>')} ${namespace ? `${namespace}/` : ''}${nameOf(object)}`;
    const explanation = opts.explain ? explainAdmission(input, snapshot, compiled, references) : undefined;
    if (explanation && opts.output === 'yaml')
      io.stderr(formatExplanation(label, explanation, palette(false)));
    tellOutcome(io, outcome, label);
    const result = restoreNamespace(resultObject(outcome, subject), object);
    if (!outcome.allowed) rejected = true;
    else admitted.push(result);
    verdicts.push({
      kind: typeof object.kind === 'string' ? object.kind : '',
      namespace,
      name: nameOf(object),
      allowed: outcome.allowed,
      message: outcome.allowed
        ? null
        : outcome.rejections
            .map((r) => `${r.rule.namespace}/${r.rule.name}${r.message ? `: ${r.message}` : ''}`)
            .join('; '),
      patch: outcome.patch as unknown as JsonValue[],
      object: result,
      rules: outcome.matched.map((r) => `${r.namespace}/${r.name}`),
      failures: outcome.failures.map((f) => ({
        rule: `${f.rule.namespace}/${f.rule.name}`,
        message: f.message,
      })),
      ...(explanation ? { explanation } : {}),
    });
  }

  if (opts.output === 'json') io.stdout(JSON.stringify(verdicts, null, 2) + '\n');
  else io.stdout(stringifyManifests(admitted));
  return rejected ? EXIT.finding : EXIT.ok;
}

/** What the rules did besides the output, on stderr: failures, Warn/DryRun rules' would-be effects, rejections. */
function tellOutcome(io: CommandIO, outcome: AdmissionOutcome, label: string): void {
  for (const f of outcome.failures)
    io.stderr(`warning: ModRule ${f.rule.namespace}/${f.rule.name} failed on ${label}: ${f.message}\n`);
  // Warn and DryRun rules leave the object as it is, as the webhook does; what they would do is said here.
  for (const u of outcome.unenforced)
    io.stderr(
      `note: ModRule ${u.rule.namespace}/${u.rule.name} (${u.action}) ${unenforcedSummary(u)} on ${label}\n`,
    );
  if (!outcome.allowed)
    for (const r of outcome.rejections)
      io.stderr(
        `rejected ${label} by ${r.rule.namespace}/${r.rule.name}${r.message ? `: ${r.message}` : ''}\n`,
      );
}
