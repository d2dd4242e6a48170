import { JsonObject } from '../util/json';
import { namespaceOf, metadataOf } from '../util/meta';
import { CLUSTER_SCOPED_KINDS } from '../rule/kinds';
import { ReferenceObjects, referencesFrom } from '../store/references';
import { RuleStore } from '../store/rules';

/**
 * Objects standing in for the cluster (`--cluster`, a test suite's `cluster:`): Namespaces and Nodes go to the store
 * (syntheticRefs.namespace and .node, the ignore label), and every object can be read by rules (spec.references,
 * syntheticRefs.owner). Namespaced objects without a namespace take `defaultNamespace`, as kubectl would apply them.
 */
export function standInCluster(
  store: RuleStore,
  objects: readonly JsonObject[],
  defaultNamespace: string,
): ReferenceObjects {
  for (const o of objects) {
    if (o.kind === 'Namespace') store.upsertNamespace(o);
    else if (o.kind === 'Node') store.upsertNode(o);
  }
  return referencesFrom(objects.map((o) => inNamespace(o, defaultNamespace)));
}

function inNamespace(o: JsonObject, namespace: string): JsonObject {
  if (namespaceOf(o) || (typeof o.kind === 'string' && CLUSTER_SCOPED_KINDS.has(o.kind))) return o;
  return { ...o, metadata: { ...metadataOf(o), namespace } };
}

/**
 * The help line of the flag that lets rules reference Secrets (off by default, as in the operator), its description
 * from `column` on (the help's own column); the flag takes a line of its own when it does not fit before it.
 */
export function allowSecretsHelp(column: number): string {
  const flag = '  --allow-secret-references';
  const lead = flag.length + 2 > column ? `${flag}\n${' '.repeat(column)}` : flag.padEnd(column);
  return `${lead}rules may reference Secrets (the operator needs the same flag)`;
}
