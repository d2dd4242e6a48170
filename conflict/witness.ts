import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../util/json';
import { RequestBudget } from '../util/budget';
import type { CompiledRule } from '../rule/compile';
import { SelectCache } from '../jsonpath/select-cache';
import { ruleMatches } from '../engine/match';
import { applyOperations, MAX_OPERATIONS_PER_REQUEST, resolveOperations } from '../engine/patch';
import { RuleFacts } from './facts';

/*
 * The run-time checks need an object the rules match. With no cluster to list, a witness is built: a small object
 * of a kind the rules name (a skeleton with the usual structure), with the exact values their fixed criteria ask for
 * and without the fields they require absent. A rule the witness does not match is not checked (no finding is
 * better than a false one). Each run is bounded by a small budget: rule text is never trusted.
 */

const POD_SPEC: JsonObject = { containers: [{ name: 'main', image: 'registry.example.com/app:1.0' }] };
const TEMPLATE: JsonObject = { metadata: { labels: { app: 'witness' } }, spec: POD_SPEC };
const WORKLOAD: JsonObject = { selector: { matchLabels: { app: 'witness' } }, template: TEMPLATE };
const SKELETONS: Record<string, { apiVersion: string; body: JsonObject }> = {
  Pod: { apiVersion: 'v1', body: { spec: POD_SPEC } },
  Deployment: { apiVersion: 'apps/v1', body: { spec: { replicas: 1, ...WORKLOAD } } },
  StatefulSet: { apiVersion: 'apps/v1', body: { spec: { replicas: 1, ...WORKLOAD } } },
  DaemonSet: { apiVersion: 'apps/v1', body: { spec: WORKLOAD } },
  ReplicaSet: { apiVersion: 'apps/v1', body: { spec: { replicas: 1, ...WORKLOAD } } },
  Job: { apiVersion: 'batch/v1', body: { spec: { template: TEMPLATE } } },
  CronJob: {
    apiVersion: 'batch/v1',
    body: { spec: { schedule: '0 * * * *', jobTemplate: { spec: { template: TEMPLATE } } } },
  },
  Service: { apiVersion: 'v1', body: { spec: { selector: { app: 'witness' }, ports: [{ port: 80 }] } } },
  ConfigMap: { apiVersion: 'v1', body: { data: { key: 'value' } } },
  Secret: { apiVersion: 'v1', body: { type: 'Opaque', data: {} } },
  Namespace: { apiVersion: 'v1', body: {} },
};

/** A witness of `kind` for rules with these facts, in `namespace` ('' for none); undefined when they cannot meet. */
export function witnessFor(
  kind: string,
  namespace: string,
  facts: readonly RuleFacts[],
): JsonObject | undefined {
  const skeleton = SKELETONS[kind] ?? { apiVersion: 'v1', body: {} };
  const metadata: JsonObject = { name: 'witness', labels: {}, annotations: {} };
  if (namespace && kind !== 'Namespace') metadata.namespace = namespace;
  const object: JsonObject = { apiVersion: skeleton.apiVersion, kind, metadata, ...cloneJson(skeleton.body) };
  for (const f of facts)
    for (const [path, values] of f.fixed) {
      const [first] = values;
      if (first === undefined) return undefined;
      put(object, path.split('.'), first);
    }
  for (const f of facts)
    for (const [path, not] of f.excluded) {
      const tokens = path.split('.');
      const have = get(object, tokens);
      if (not === 'absent' || (typeof have === 'string' && not.has(have))) drop(object, tokens);
    }
  // The kind tried wins over the first value of a `$.kind` criterion naming several.
  object.kind = kind;
  return object;
}

/** The kinds to try for rules with these facts: those they all name, else a Deployment. */
export function witnessKinds(kinds: ReadonlySet<string> | null): string[] {
  return kinds === null ? ['Deployment'] : [...kinds].slice(0, 3);
}

function put(object: JsonObject, tokens: string[], value: string): void {
  let at: JsonObject = object;
  for (const t of tokens.slice(0, -1)) {
    const next = at[t];
    if (!isJsonObject(next)) at[t] = {};
    at = at[t] as JsonObject;
  }
  at[tokens[tokens.length - 1]] = value;
}

function get(object: JsonValue, tokens: string[]): JsonValue | undefined {
  let at: JsonValue | undefined = object;
  for (const t of tokens) at = isJsonObject(at) ? at[t] : undefined;
  return at;
}

function drop(object: JsonObject, tokens: string[]): void {
  const parent = get(object, tokens.slice(0, -1));
  if (isJsonObject(parent)) delete parent[tokens[tokens.length - 1]];
}

/** Steps one run of a rule may take (match, templates, operations): ample for real rules, small for hostile ones. */
const RUN_STEPS = 200_000;

/** Whether the rule matches the object (false when it cannot be evaluated within a small budget). */
export function matchesWitness(rule: CompiledRule, object: JsonObject): boolean {
  try {
    return ruleMatches(
      rule,
      object,
      new SelectCache(object, new RequestBudget({ steps: RUN_STEPS, ms: 50 })),
    );
  } catch {
    return false;
  }
}

/** The object after the rule's patch (undefined when it fails or does not leave an object). */
export function applyWitness(rule: CompiledRule, object: JsonObject): JsonObject | undefined {
  try {
    const request = new RequestBudget({ steps: RUN_STEPS, ms: 50 });
    const ops = resolveOperations(
      rule,
      object,
      String(isJsonObject(object.metadata) ? (object.metadata.namespace ?? '') : ''),
      {
        remaining: MAX_OPERATIONS_PER_REQUEST,
        request,
      },
    );
    const next = applyOperations(object, ops, request);
    return isJsonObject(next) ? next : undefined;
  } catch {
    return undefined;
  }
}
