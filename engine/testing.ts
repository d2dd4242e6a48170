// Test helpers for the engine (excluded from the build): rule stores from YAML and an admit() that checks the
// invariants every outcome must keep.
import { parseAllDocuments } from 'yaml';
import { cloneJson, JsonObject } from '../util/json';
import { AdmissionOperation } from '../rule/types';
import { applyPatch } from '../patch/rfc6902';
import { RuleStore } from '../store/rules';
import { admit, AdmissionOutcome } from './admit';

/** A store holding the ModRules of the YAML texts (rules without a namespace go to `default`) and cluster objects. */
export function storeFromYaml(
  rules: string | readonly string[],
  options: { clusterNamespace?: string; cluster?: readonly JsonObject[] } = {},
): RuleStore {
  const store = new RuleStore({ clusterNamespace: options.clusterNamespace });
  for (const text of typeof rules === 'string' ? [rules] : rules) {
    for (const doc of parseAllDocuments(text)) {
      const rule = doc.toJS() as JsonObject;
      const meta = rule.metadata as JsonObject;
      meta.namespace ??= 'default';
      const problems = store.upsertRule(rule);
      if (problems.length) throw new Error(`test rule ${String(meta.name)}: ${JSON.stringify(problems)}`);
    }
  }
  for (const o of options.cluster ?? []) {
    if (o.kind === 'Namespace') store.upsertNamespace(o);
    else store.upsertNode(o);
  }
  return store;
}

/** A ModRule document (a leading `---`, so documents concatenate) named `name` in no namespace, `spec` as YAML. */
export function ruleYaml(name: string, spec: string): string {
  const body = spec
    .trim()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
  return `---\napiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: ${name}\nspec:\n${body}\n`;
}

export interface AdmitOptions {
  operation?: AdmissionOperation;
  /** Default 'default'; null for cluster-scoped objects. */
  namespace?: string | null;
  oldObject?: JsonObject | null;
}

/** admit() against the store's snapshot, asserting that the input is untouched and the patch yields the result. */
export function admitChecked(
  store: RuleStore,
  object: JsonObject | null,
  options: AdmitOptions = {},
): AdmissionOutcome {
  const before = cloneJson(object);
  const outcome = admit(
    {
      operation: options.operation ?? 'CREATE',
      object,
      oldObject: options.oldObject ?? null,
      namespace: options.namespace === undefined ? 'default' : options.namespace,
    },
    store.snapshot(),
  );
  // The engine never mutates its input.
  expect(object).toEqual(before);
  // The patch the API server gets is valid RFC 6902 against the original and yields the returned object.
  if (object && outcome.allowed) expect(applyPatch(object, outcome.patch)).toEqual(outcome.object);
  return outcome;
}
