import { JsonObject } from '../util/json';
import { messageOf } from '../util/errors';
import { stringifyManifests } from '../util/yaml';
import { DEFAULT_CLUSTER_NAMESPACE, MODRULE_API_VERSION, MODRULE_KIND } from '../rule/types';
import { RuleStore } from '../store/rules';
import { ResourceCatalog } from '../scope/catalog';
import { IgnoreEntry, ignoredPaths } from '../gitops/paths';
import { FluxTarget, ignorePatch } from '../gitops/render';
import { ClusterAccess } from '../kube/access';
import { loadClusterAccess } from '../kube/credentials';
import { createKubeClient, KubeClient } from '../kube/kube';
import { MODRULES_PATH } from '../kube/owned';
import { discoverResources } from '../operator/audit/discovery';
import { listAll } from '../operator/audit/prepare';
import { loadPaths, loadRules } from './load';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { CommandIO, UsageError } from './io';

const USAGE = `usage: modrule export argocd|flux [--rules PATH...] [--flux-target kustomization|helmrelease]
                      [--record-patched-by] [--namespace NS] [--cluster-namespace NS] [--output yaml|json]

Prints what a GitOps tool must not count as drift because the ModRules patch it: per group and kind, the paths the
enforced Patch rules write (docs/gitops.md). Webhook patches are recorded under the writer's field manager, so
ignoring by manager cannot single them out: it has to be by path.

  argocd                an Argo CD Application patch: spec.ignoreDifferences (jsonPointers; jqPathExpressions for
                        list elements, an appended element by its name). Sync with RespectIgnoreDifferences=true
  flux                  a Flux patch: Kustomization spec.ignore, or HelmRelease spec.driftDetection.ignore (JSON
                        pointers only: a write into list elements ignores the whole list)
  --rules PATH          ModRule files or folders (CRDs among them map their kinds to groups); repeatable;
                        default: the ModRules in the cluster (KUBECONFIG, else ~/.kube/config)
  --flux-target T       kustomization (default) or helmrelease
  --record-patched-by   the operator runs with --record-patched-by: its annotation is ignored too
  --namespace NS        namespace of --rules ModRules that name none (default "default")
  --cluster-namespace NS
                        namespace of cluster-wide ModRules (default "${DEFAULT_CLUSTER_NAMESPACE}")
  -o, --output yaml|json
                        yaml (default): the patch, for kubectl patch --type merge --patch-file; json: the patch
                        and, per group and kind, the rules that write there
  -h, --help            show this help

${exitHelp(undefined, 'a cluster that cannot be reached')}`;

/** Test hooks: a client instead of the kubeconfig. */
export interface GitOpsHooks {
  client?: KubeClient;
  access?: ClusterAccess;
  env?: Record<string, string | undefined>;
}

/** The rules and the kinds' groups: from files (built-in kinds plus their CRDs), or from the cluster. */
async function source(
  options: { rules?: string[]; namespace: string; clusterNamespace: string },
  io: CommandIO,
  hooks: GitOpsHooks,
): Promise<{ store: RuleStore; catalog: ResourceCatalog }> {
  const store = new RuleStore({ clusterNamespace: options.clusterNamespace });
  if (options.rules) {
    await loadRules(store, options.rules, options.namespace, io);
    const crds = (await loadPaths(options.rules, io)).filter(
      (l) => l.object.kind === 'CustomResourceDefinition',
    );
    return { store, catalog: ResourceCatalog.builtin(crds.map((l) => l.object)) };
  }
  let client = hooks.client;
  try {
    client ??= createKubeClient(hooks.access ?? (await loadClusterAccess(hooks.env ?? process.env)));
    const rules = await listAll(client, MODRULES_PATH, {
      apiVersion: MODRULE_API_VERSION,
      kind: MODRULE_KIND,
    });
    for (const r of store.replaceRules(rules))
      io.stderr(
        `modrule export: note: ModRule ${r.namespace}/${r.name} is invalid and not in force: left out\n`,
      );
    return { store, catalog: new ResourceCatalog((await discoverResources(client)).resources) };
  } catch (err) {
    throw new UsageError(`cannot read the cluster's ModRules: ${messageOf(err)}`);
  }
}

function notes(tool: 'argocd' | 'flux', entries: readonly IgnoreEntry[]): string[] {
  if (tool === 'argocd')
    return entries.length > 0
      ? ['sync with the option RespectIgnoreDifferences=true, or a sync writes the ignored paths back']
      : [];
  const coarse = entries.filter((e) => e.jqPathExpressions.length > 0).map((e) => `${e.target.kind}`);
  return coarse.length > 0
    ? [
        `Flux paths are JSON pointers: writes into list elements are ignored as the whole list (${coarse.join(', ')})`,
      ]
    : [];
}

/** modrule export argocd|flux, with hooks for tests. */
export async function runGitOpsExport(
  tool: 'argocd' | 'flux',
  args: string[],
  io: CommandIO,
  hooks: GitOpsHooks = {},
): Promise<number> {
  const parsed = parseCommand(args, {
    options: {
      rules: { type: 'string', multiple: true },
      'flux-target': { type: 'string', default: 'kustomization' },
      'record-patched-by': { type: 'boolean', default: false },
      namespace: { type: 'string', default: 'default' },
      'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
      output: { type: 'string', short: 'o', default: 'yaml' },
    },
    usage: USAGE,
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const v = parsed.values;
  if (v.output !== 'yaml' && v.output !== 'json') throw new UsageError('--output must be yaml or json');
  const target = v['flux-target'];
  if (target !== 'kustomization' && target !== 'helmrelease')
    throw new UsageError(`--flux-target must be kustomization or helmrelease, not "${target}"`);
  const { store, catalog } = await source(
    { rules: v.rules, namespace: v.namespace, clusterNamespace: v['cluster-namespace'] },
    io,
    hooks,
  );
  const { entries, notes: left } = ignoredPaths(store.allRules(), {
    catalog,
    recordPatchedBy: v['record-patched-by'],
  });
  for (const n of [...left, ...notes(tool, entries)]) io.stderr(`modrule export: note: ${n}\n`);
  const patch: JsonObject = ignorePatch(tool === 'argocd' ? 'argocd' : (target as FluxTarget), entries);
  if (v.output === 'json')
    io.stdout(
      `${JSON.stringify({ patch, writers: entries.map((e) => ({ ...e.target, rules: e.rules })) }, null, 2)}\n`,
    );
  else io.stdout(stringifyManifests([patch]));
  return EXIT.ok;
}

export { USAGE as GITOPS_USAGE };
