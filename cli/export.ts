import { stringifyManifests } from '../util/yaml';
import { cloneJson, isJsonObject, JsonObject } from '../util/json';
import { analyzeModRule } from '../rule/compile';
import { DEFAULT_CLUSTER_NAMESPACE, MODRULE_KIND } from '../rule/types';
import { compileNative, defaultDragnetMatch, NativeReason, policyName } from '../native';
import { loadPaths } from './load';
import { nameOf } from './objects';
import { duplicateKeyProblem } from '../util/yaml-duplicates';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { CommandIO, UsageError } from './io';
import { metadataOf } from '../util/meta';

const USAGE = `usage: modrule export --native --rules PATH... [options]
       modrule export argocd|flux [options]   (paths GitOps tools must ignore: modrule export argocd --help)

Compiles ModRules to Kubernetes admission policies the API server runs itself: a MutatingAdmissionPolicy (Patch
rules) or ValidatingAdmissionPolicy (Reject rules) with its binding, admissionregistration.k8s.io/v1 (Kubernetes
1.36+). Every rule that fits is written to standard output as YAML for \`kubectl apply -f -\`; for every rule that
does not, the reasons are printed on standard error with the field they are about (docs/native.md lists what
compiles). Objects a policy cannot decide exactly (kubectl's last-applied-configuration annotation on a patched
object, values of types the CEL does not handle) are left to the modrule webhook: run it alongside.

  --native              compile to native admission policies
  --rules PATH          ModRule files or folders (recursive .yaml/.yml/.json, multi-document); repeatable
  --namespace NS        namespace for ModRules that name none (default "default")
  --cluster-namespace NS
                        namespace of cluster-wide ModRules (default "${DEFAULT_CLUSTER_NAMESPACE}")
  --operator-namespace NS
                        the operator's own namespace, which the policies leave alone as the dragnet
                        webhook does (default: the cluster namespace)
  --output yaml|json    yaml (default): the policies as a YAML stream; json: one array with every rule's result

${exitHelp('at least one rule does not fit (the reasons are on standard error)')}`;

/** One element of \`--output json\`. */
export interface ExportResult {
  file: string;
  namespace: string;
  name: string;
  fits: boolean;
  reasons: NativeReason[];
  objects: JsonObject[];
}

/** modrule export --native; modrule export argocd|flux (cli/export-gitops.ts). */
export async function run(args: string[], io: CommandIO): Promise<number> {
  if (args[0] === 'argocd' || args[0] === 'flux')
    return (await import('./export-gitops')).runGitOpsExport(args[0], args.slice(1), io);
  return runNative(args, io);
}

/** modrule export --native. */
async function runNative(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommand(args, {
    options: {
      native: { type: 'boolean', default: false },
      rules: { type: 'string', multiple: true },
      namespace: { type: 'string', default: 'default' },
      'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
      'operator-namespace': { type: 'string' },
      output: { type: 'string', default: 'yaml' },
    },
    usage: USAGE,
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const opts = parsed.values;
  if (!opts.native) throw new UsageError(`--native, argocd or flux is required\n\n${USAGE}`);
  if (!opts.rules || opts.rules.length === 0) throw new UsageError(`--rules is required\n\n${USAGE}`);
  if (opts.output !== 'yaml' && opts.output !== 'json') throw new UsageError('--output must be yaml or json');
  const clusterNamespace = opts['cluster-namespace'];
  const dragnet = defaultDragnetMatch(opts['operator-namespace'] ?? clusterNamespace);

  const results: ExportResult[] = [];
  const invalid: string[] = [];
  const names = new Map<string, string>();
  for (const { file, object, duplicates } of await loadPaths(opts.rules, io)) {
    if (object.kind !== MODRULE_KIND) continue;
    const rule = cloneJson(object);
    if (isJsonObject(rule.metadata) && !rule.metadata.namespace) rule.metadata.namespace = opts.namespace;
    const namespace = String(metadataOf(rule).namespace);
    const id = `${namespace}/${nameOf(rule) || '<unnamed>'}`;
    const analyzed = analyzeModRule(rule);
    const compiled = duplicates.length > 0 ? undefined : analyzed.rule;
    const problems = duplicates.length > 0 ? duplicates.map(duplicateKeyProblem) : analyzed.problems;
    if (!compiled) {
      for (const p of problems)
        invalid.push(`${file}: ModRule ${id}: ${p.field ? `${p.field}: ` : ''}${p.message}`);
      continue;
    }
    const result: ExportResult = {
      file,
      namespace,
      name: compiled.name,
      fits: false,
      reasons: [],
      objects: [],
    };
    results.push(result);
    const name = policyName(compiled);
    const earlier = names.get(name);
    if (earlier) {
      result.reasons.push({
        field: 'metadata.name',
        message: `policy name ${name} is already taken by the ModRule in ${earlier}`,
      });
      continue;
    }
    const native = compileNative(compiled, { clusterNamespace, dragnet, unenforcedActions: true });
    if (!native.fits) {
      result.reasons.push(...native.reasons);
      continue;
    }
    names.set(name, file);
    result.fits = true;
    result.objects.push(native.policy, native.binding);
  }
  if (invalid.length > 0) throw new UsageError(`invalid ModRules:\n  ${invalid.join('\n  ')}`);

  for (const r of results)
    for (const reason of r.reasons)
      io.stderr(
        `${r.file}: ModRule ${r.namespace}/${r.name} does not fit: ${reason.field}: ${reason.message}\n`,
      );
  const fitting = results.filter((r) => r.fits).length;
  io.stderr(`${fitting} of ${results.length} ModRules compile to native policies\n`);
  if (opts.output === 'json') io.stdout(JSON.stringify(results, null, 2) + '\n');
  else io.stdout(stringifyManifests(results.flatMap((r) => r.objects)));
  return fitting === results.length ? EXIT.ok : EXIT.finding;
}
