import { JsonObject } from '../util/json';
import { stringifyManifests } from '../util/yaml';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { RuleStore } from '../store/rules';
import { ResourceCatalog } from '../scope/catalog';
import { computeScope, ScopeResult } from '../scope/compute';
import { findConflicts } from '../conflict/find';
import { defaultConfigured } from '../scope/defaults';
import { readLive } from '../scope/ownership';
import { dragnetOf, scopeJson } from '../scope/entry';
import { Scope } from '../scope/types';
import { loadPaths, loadRules } from './load';
import { warnDuplicateKeys } from './duplicates';
import { parsePathCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { Command, CommandIO, UsageError } from './io';
import { DRAGNET_WEBHOOK } from '../kube/owned';

const USAGE = `usage: modrule scope PATH... [--namespace NS] [--cluster-namespace NS] [--configuration FILE]
                     [--output text|json]

Shows which requests the API server will send the dragnet webhook for these ModRules, as the operator computes
it in a cluster: the webhook rules (resources and operations), the namespaceSelector and the CEL matchConditions.
Offline: kinds are mapped to resources with Kubernetes 1.37's built-in resources plus the CustomResourceDefinitions
found under PATH. Then the conflicts between the rules (as \`modrule validate\` reports them, docs/conflicts.md),
each once with both rules and the path.

  --namespace NS          namespace of rules without one (default default)
  --cluster-namespace NS  namespace of cluster-wide rules (default kubemod-system)
  --configuration FILE    the installed net to narrow: a file with the MutatingWebhookConfiguration (bundle.yaml,
                          or kubectl get mutatingwebhookconfiguration kubemod-mutating-webhook-configuration -o yaml);
                          default: the net bundle.yaml installs
  -o, --output text|json  text (default): per rule, the registration as YAML, then the conflicts; json: one
                          object (conflicts: [{kind, rule, other, path, on, message}])
  -h, --help              show this help

${exitHelp('rules in conflict', 'an invalid ModRule or an unreadable file')}`;

/** The configured net from a configuration file (its dragnet webhook), as the operator reads the live one. */
async function configuredFrom(file: string, io: CommandIO): Promise<Scope> {
  const loaded = await loadPaths([file], io);
  warnDuplicateKeys(loaded, io);
  for (const { object } of loaded) {
    if (object.kind !== 'MutatingWebhookConfiguration') continue;
    const dragnet = dragnetOf(object);
    if (dragnet) return readLive(object, dragnet.webhook).configured;
  }
  throw new UsageError(`${file}: no MutatingWebhookConfiguration with a ${DRAGNET_WEBHOOK} webhook`);
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** The text report: one row per rule, the registration, what the limits made coarser. */
export function formatScope(result: ScopeResult): string {
  const rows = [['RULE', 'OPERATIONS', 'RESOURCES', 'NAMESPACES', 'CLUSTER', 'NOTES']];
  for (const r of result.rules)
    rows.push([
      r.controller ? `${r.rule} (${r.controller})` : r.rule,
      r.operations.join(',') || '-',
      r.resources.join(',') || '-',
      r.namespaces,
      r.cluster ? 'yes' : 'no',
      r.notes.join('; '),
    ]);
  const { stats } = result;
  const n = (count: number, what: string) =>
    `${count} ${what}${count === 1 ? '' : what.endsWith('x') ? 'es' : 's'}`;
  const summary =
    `${n(result.registration.rules.length, 'webhook rule')}, ${n(stats.conditions, 'condition')} ` +
    `(${n(stats.characters, 'character')}, ${n(stats.regexes, 'regex')}), ` +
    `${n(stats.selectorNames, 'namespace')} in the selector\n`;
  const registration = stringifyManifests([{ name: DRAGNET_WEBHOOK, ...scopeJson(result.registration) }]);
  const coarse = result.coarsened.map((c) => `coarsened: ${c}\n`).join('');
  return `${table(rows)}\nThe API server sends ${DRAGNET_WEBHOOK} what this registration matches:\n${registration}${summary}${coarse}`;
}

/** `modrule scope`. */
export const run: Command = async (args, io) => {
  const parsed = parsePathCommand(args, USAGE, {
    namespace: { type: 'string', short: 'n', default: 'default' },
    'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
    configuration: { type: 'string' },
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const { values, output, paths } = parsed;
  const clusterNamespace = String(values['cluster-namespace']);
  const store = new RuleStore({ clusterNamespace });
  await loadRules(store, paths, String(values.namespace), io);
  const crdFiles = (await loadPaths(paths, io)).filter((l) => l.object.kind === 'CustomResourceDefinition');
  warnDuplicateKeys(crdFiles, io);
  const crds: JsonObject[] = crdFiles.map((l) => l.object);
  const configured =
    typeof values.configuration === 'string'
      ? await configuredFrom(values.configuration, io)
      : defaultConfigured(clusterNamespace);
  const result = computeScope({
    rules: store.allRules(),
    clusterNamespace,
    configured,
    catalog: ResourceCatalog.builtin(crds),
  });
  const { conflicts } = findConflicts(store.allRules(), { clusterNamespace });
  if (output === 'json') {
    const { clauses: _clauses, ...rest } = result;
    const found = conflicts.map((c) => ({
      kind: c.kind,
      rule: c.rule.key,
      other: c.other?.key ?? null,
      path: c.path,
      on: c.on,
      message: c.message,
    }));
    io.stdout(
      JSON.stringify({ ...rest, registration: scopeJson(result.registration), conflicts: found }, null, 2) +
        '\n',
    );
  } else {
    io.stdout(formatScope(result));
    for (const c of conflicts) io.stdout(`conflict (${c.kind}): ${c.message}\n`);
  }
  return conflicts.length > 0 ? EXIT.finding : EXIT.ok;
};
