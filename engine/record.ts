import { isJsonObject, JsonObject } from '../util/json';
import { metadataOf } from '../util/meta';
import { CompiledRule } from '../rule/compile';
import { RuleRef } from './outcome';

// The record of which ModRules patched an object, kept on the object itself (opt-in: `--record-patched-by`): the
// first thing to look at when an object is not as its manifest says.

/** The annotation naming the ModRules that patched the object (`namespace/name`, comma-separated). */
export const PATCHED_BY_ANNOTATION = 'modrule.io/patched-by';

/**
 * The rules the record names after this admission: those whose patch applied now (`applied`), and those it named
 * already that are still in force for the object, in the order the rules run (tier, namespace, name); `[]` when none.
 *
 * Why not only the rules that patched at this admission: a rule guarded to patch once (a label added only when
 * missing: the way idempotent rules are written) no longer matches when its change is in place, so a record of the
 * last admission alone would drop it at the next `kubectl label`, or flap on a re-apply whose merge leaves the label.
 * Its change is still on the object, so it stays named until the rule is deleted or no longer applies to the object's
 * namespace: then nothing of it is in force, and it leaves the record at the object's next admission.
 */
export function recordedRules(
  object: JsonObject,
  applied: readonly RuleRef[],
  inForce: readonly CompiledRule[],
): string[] {
  const before = rawAnnotations(object)?.[PATCHED_BY_ANNOTATION];
  // Nothing recorded before: the rules that applied, already in the order they ran.
  if (typeof before !== 'string' || before === '') return applied.map((r) => `${r.namespace}/${r.name}`);
  const named = new Set(applied.map((r) => `${r.namespace}/${r.name}`));
  for (const key of before.split(',')) if (key.trim() !== '') named.add(key.trim());
  // inForce is in evaluation order already (RuleSnapshot.rulesFor).
  return inForce.filter((r) => named.has(r.key)).map((r) => r.key);
}

/**
 * `object` with the record set to `rules` (removed when there are none): the same object when it already says so,
 * else a copy whose metadata and annotations are new (the request's object is never written).
 */
export function withPatchRecord(object: JsonObject, rules: readonly string[]): JsonObject {
  const annotations = rawAnnotations(object);
  const before = annotations?.[PATCHED_BY_ANNOTATION];
  // One pass of concatenation: rules.join took ~8 us on the realistic bench's 15 names, this 0.4 us (measured).
  let value = '';
  for (const [i, rule] of rules.entries()) value += i === 0 ? rule : `,${rule}`;
  if (rules.length === 0 ? before === undefined : before === value) return object;
  const next: JsonObject = {};
  // Copied key by key: a `delete` would put the object in V8's slow dictionary mode for the diff and the encoder.
  if (annotations)
    for (const key of Object.keys(annotations))
      if (key !== PATCHED_BY_ANNOTATION) next[key] = annotations[key];
  if (rules.length > 0) next[PATCHED_BY_ANNOTATION] = value;
  return { ...object, metadata: { ...metadataOf(object), annotations: next } };
}

// The annotations as they are (values untouched), on the request path: no copy.
function rawAnnotations(object: JsonObject): JsonObject | undefined {
  const annotations = metadataOf(object).annotations;
  return isJsonObject(annotations) ? annotations : undefined;
}
