import { JsonObject } from '../util/json';
import { ResourceCatalog } from '../scope/catalog';
import { describeUnserved, kindField, unservedKindsOf } from '../scope/unserved';
import { ReferenceObjects } from '../store/references';
import { RuleStore } from '../store/rules';
import { standInCluster } from './cluster';
import { warnDuplicateKeys } from './duplicates';
import { CommandIO, displayName, UsageError } from './io';
import { Loaded, loadPaths, loadRuleFiles } from './load';
import { identity, scope } from './objects';

// What `modrule apply` reads before it admits anything, and the mistakes it refuses or warns about there, so that
// none passes silently: rules files with no ModRule, input that is not Kubernetes objects, a kind nothing serves.

/** The paths and namespaces apply reads with. */
export interface ApplySources {
  rules: readonly string[];
  file: string;
  cluster: readonly string[];
  old: readonly string[];
  namespace: string;
  clusterNamespace: string;
  allowSecrets: boolean;
}

/** The rules in a store, the stand-in cluster, the objects to admit and their old versions by identity. */
export interface ApplyInput {
  store: RuleStore;
  references: ReferenceObjects;
  olds: Map<string, JsonObject>;
  inputs: Loaded[];
}

/** Reads everything apply admits; throws UsageError for what cannot be applied, warns on stderr about the rest. */
export async function loadApplyInput(sources: ApplySources, io: CommandIO): Promise<ApplyInput> {
  const store = new RuleStore({
    clusterNamespace: sources.clusterNamespace,
    references: { allowSecrets: sources.allowSecrets },
  });
  const { rules, others } = await loadRuleFiles(store, sources.rules, sources.namespace, io);
  if (rules.length === 0)
    throw new UsageError(
      `no ModRule in ${sources.rules.map(displayName).join(', ')}: nothing to apply (give the files or folders ` +
        'that hold your ModRules)',
    );
  const clusterFiles = await loadPaths(sources.cluster, io);
  warnDuplicateKeys(clusterFiles, io);
  const cluster = clusterFiles.map((l) => l.object);
  const references = standInCluster(store, cluster, sources.namespace);

  const olds = new Map<string, JsonObject>();
  const oldObjects = await loadPaths(sources.old, io);
  warnDuplicateKeys(oldObjects, io);
  for (const { object } of oldObjects) olds.set(identity(object, scope(object, sources.namespace)), object);

  const inputs = await loadPaths([sources.file], io);
  warnDuplicateKeys(inputs, io);
  refuseNonObjects(inputs);
  const given = [...others, ...cluster, ...inputs.map((l) => l.object)];
  for (const line of unservedKindWarnings(store, given, sources.clusterNamespace)) io.stderr(line);
  return { store, references, olds, inputs };
}

/**
 * Documents without apiVersion or kind (`foo: bar`) are not Kubernetes objects: admitting them would print them back
 * with an invented `metadata: {}`, and kubectl would refuse them later. Every one is named at once.
 */
function refuseNonObjects(inputs: readonly Loaded[]): void {
  const problems = inputs.flatMap(({ file, document, object }) => {
    const missing = ['apiVersion', 'kind'].filter((f) => typeof object[f] !== 'string' || object[f] === '');
    if (missing.length === 0) return [];
    const what = missing.length === 2 ? 'apiVersion and kind are missing' : `${missing[0]} is missing`;
    return [`${displayName(file)}: document ${document}: not a Kubernetes object: ${what}`];
  });
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
}

/**
 * A warning per kind a rule names that is neither built into Kubernetes nor declared by a CRD given (rules files,
 * --cluster, --file), nor the kind of an object given: the rule matches none of its objects (a misspelling, mostly).
 */
function unservedKindWarnings(
  store: RuleStore,
  objects: readonly JsonObject[],
  clusterNamespace: string,
): string[] {
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const catalog = ResourceCatalog.builtin(crds);
  const given = new Set(objects.map((o) => o.kind));
  return store.allRules().flatMap((rule) =>
    unservedKindsOf(rule, catalog, clusterNamespace)
      .filter((u) => !given.has(u.kind))
      .map(
        (u) =>
          `warning: ModRule ${rule.namespace}/${rule.name}: ${kindField(rule, u.kind)}: ` +
          `${describeUnserved(u, 'built into Kubernetes 1.37 nor declared by a CustomResourceDefinition in the input')}: ` +
          'the rule matches none of its objects\n',
      ),
  );
}
