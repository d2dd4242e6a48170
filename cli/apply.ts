import { stringifyManifests } from '../util/yaml';
import { admit, AdmissionOutcome } from '../engine/admit';
import { AdmissionExplanation, explainAdmission } from '../engine/explain';
import { unenforcedSummary } from '../engine/unenforced';
import { JsonObject, JsonValue } from '../util/json';
import { AdmissionOperation, DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { CLUSTER_SCOPED_KINDS } from '../rule/kinds';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { allowSecretsHelp } from './cluster';
import { ApplyInput, loadApplyInput } from './apply-input';
import { formatExplanation, palette } from './explain';
import { CommandIO, fileOrStdin, UsageError } from './io';
import { failureLine, ON_ERROR_OPTION, OnError, onErrorHelp, parseOnError, RunTimeFailure } from './failures';
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
${onErrorHelp(24, 'exit 1, no object written (json: the verdicts)', "exit 0, objects without that rule's changes, as the webhook admits them")}
                        (either way one line on stderr sums the failures up; -o json lists each)
${allowSecretsHelp(24)}
  -h, --help            show this help

${exitHelp('at least one object rejected', 'a ModRule failing at run time (--on-error fail)')}`;

const AS_THE_WEBHOOK = "without the failing rules' changes, as the webhook admits them";
const YAML_CONSEQUENCE = {
  fail: `no object is written (--on-error=warn writes them ${AS_THE_WEBHOOK}; -o json lists every failure)`,
  warn: `the objects are written ${AS_THE_WEBHOOK} (-o json lists every failure)`,
};
const JSON_CONSEQUENCE = {
  fail: `exit 1 (--on-error=warn: carry on ${AS_THE_WEBHOOK}); the verdicts list every failure`,
  warn: `the verdicts are ${AS_THE_WEBHOOK}, and list every failure`,
};

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

/** Who runs apply: its name in messages and what a run-time failure means for its output (see failures.ts). */
export interface ApplyCaller {
  command: string;
  consequence?: Record<OnError, string>;
}

/** modrule apply: runs ModRules against manifests without a cluster. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  return runApply(args, io, { command: 'apply' });
}

const OPTIONS = {
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
  ...ON_ERROR_OPTION,
} as const;

/** How apply admits: what the options say beyond the files to read. */
interface AdmitOptions {
  operation: AdmissionOperation;
  namespace: string;
  output: 'yaml' | 'json';
  explain: boolean;
  recordPatchedBy: boolean;
}

/** modrule apply for `caller` (post-render runs it with --output json). */
export async function runApply(args: string[], io: CommandIO, caller: ApplyCaller): Promise<number> {
  const parsed = parseCommand(args, { options: OPTIONS, usage: USAGE });
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
  const onError = parseOnError(opts['on-error']);
  const input = await loadApplyInput(
    {
      rules: opts.rules,
      file,
      cluster: opts.cluster ?? [],
      old: opts.old ?? [],
      namespace: opts.namespace,
      clusterNamespace: opts['cluster-namespace'],
      allowSecrets: opts['allow-secret-references'],
    },
    io,
  );
  const output = opts.output;
  const run = admitAll(input, io, {
    operation,
    namespace: opts.namespace,
    output,
    explain: opts.explain,
    recordPatchedBy: opts['record-patched-by'],
  });

  const stop = onError === 'fail' && run.failures.length > 0;
  const consequence = caller.consequence ?? (output === 'json' ? JSON_CONSEQUENCE : YAML_CONSEQUENCE);
  io.stderr(failureLine(caller.command, run.failures, onError, consequence));
  if (output === 'json') io.stdout(JSON.stringify(run.verdicts, null, 2) + '\n');
  else if (!stop) io.stdout(stringifyManifests(run.admitted));
  // A rejection outranks a failure (2, as it always was: KubeMod's tables and scripts read 2 as "rejected"); either
  // way no object goes on.
  if (run.rejected) return EXIT.finding;
  return stop ? EXIT.error : EXIT.ok;
}

/** Every object through admit(), as the webhook would see it: the verdicts, the objects admitted, the failures. */
function admitAll(
  { store, references, olds, inputs }: ApplyInput,
  io: CommandIO,
  opts: AdmitOptions,
): { verdicts: ApplyVerdict[]; admitted: JsonObject[]; rejected: boolean; failures: RunTimeFailure[] } {
  const snapshot = store.snapshot();
  const compiled = opts.explain ? store.allRules() : [];
  const verdicts: ApplyVerdict[] = [];
  const admitted: JsonObject[] = [];
  let rejected = false;
  const failures: RunTimeFailure[] = [];
  for (const { object } of inputs) {
    const namespace = scope(object, opts.namespace);
    // The API server fills metadata.namespace before admission; do the same, then take it back out if nothing set it.
    const subject = withNamespace(object, namespace);
    const old = olds.get(identity(object, namespace)) ?? null;
    const input = admissionInput(opts.operation, subject, old, namespace);
    // Offline, on the user's own files: messages of rules reading Secrets are shown.
    const outcome = admit(input, snapshot, undefined, {
      references,
      withholdSecrets: false,
      recordPatchedBy: opts.recordPatchedBy,
    });
    const label = `${String(object.kind ?? '<no kind>')} ${namespace ? `${namespace}/` : ''}${nameOf(object)}`;
    const explanation = opts.explain ? explainAdmission(input, snapshot, compiled, references) : undefined;
    if (explanation && opts.output === 'yaml')
      io.stderr(formatExplanation(label, explanation, palette(false)));
    for (const f of outcome.failures)
      failures.push({ rule: `${f.rule.namespace}/${f.rule.name}`, object: label, message: f.message });
    tellUnenforced(io, outcome, label);
    const result = restoreNamespace(resultObject(outcome, subject), object);
    if (outcome.allowed) admitted.push(result);
    else {
      rejected = true;
      for (const r of outcome.rejections) io.stderr(`rejected ${label} by ${ruleText(r)}\n`);
    }
    verdicts.push(verdictOf(object, namespace, outcome, result, explanation));
  }
  return { verdicts, admitted, rejected, failures };
}

function ruleText(r: { rule: { namespace: string; name: string }; message: string }): string {
  return `${r.rule.namespace}/${r.rule.name}${r.message ? `: ${r.message}` : ''}`;
}

function verdictOf(
  object: JsonObject,
  namespace: string | null,
  outcome: AdmissionOutcome,
  result: JsonObject,
  explanation: AdmissionExplanation | undefined,
): ApplyVerdict {
  return {
    kind: typeof object.kind === 'string' ? object.kind : '',
    namespace,
    name: nameOf(object),
    allowed: outcome.allowed,
    message: outcome.allowed ? null : outcome.rejections.map(ruleText).join('; '),
    patch: outcome.patch as unknown as JsonValue[],
    object: result,
    rules: outcome.matched.map((r) => `${r.namespace}/${r.name}`),
    failures: outcome.failures.map((f) => ({
      rule: `${f.rule.namespace}/${f.rule.name}`,
      message: f.message,
    })),
    ...(explanation ? { explanation } : {}),
  };
}

/** Warn and DryRun rules leave the object as it is, as the webhook does; what they would do is said on stderr. */
function tellUnenforced(io: CommandIO, outcome: AdmissionOutcome, label: string): void {
  for (const u of outcome.unenforced)
    io.stderr(
      `note: ModRule ${u.rule.namespace}/${u.rule.name} (${u.action}) ${unenforcedSummary(u)} on ${label}\n`,
    );
}
