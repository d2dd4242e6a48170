import { cloneJson, isJsonObject, JsonObject } from '../util/json';

/**
 * Fills KubeMod's defaults into a ModRule (a copy): spec.executionTier 0 (the CRD default),
 * match[].matchFor Any (KubeMod's Default() webhook) and match[].negate false.
 * admissionOperations stays absent: empty means CREATE and UPDATE, and writing it would change what users see.
 */
export function withDefaults(rule: JsonObject): JsonObject {
  const out = cloneJson(rule);
  const spec = out.spec;
  if (!isJsonObject(spec)) return out;
  if (spec.executionTier === undefined || spec.executionTier === null) spec.executionTier = 0;
  if (Array.isArray(spec.match)) {
    for (const item of spec.match) {
      if (!isJsonObject(item)) continue;
      if (item.matchFor === undefined || item.matchFor === null || item.matchFor === '')
        item.matchFor = 'Any';
      if (item.negate === undefined || item.negate === null) item.negate = false;
    }
  }
  return out;
}
