import { isJsonObject, jsonEqual, JsonObject } from '../util/json';
import { DEFAULT_BUDGET, RequestBudget } from '../util/budget';
import { namespaceOf } from '../util/meta';
import { createPatch } from '../patch/diff';
import { CompiledRule } from '../rule/compile';
import { SelectCache } from '../jsonpath/select-cache';
import { ruleMatches } from './match';
import { applyOperations, Budget, MAX_OPERATIONS_PER_REQUEST, resolveOperations } from './patch';
import { SYNTHETIC_REFS } from './subject';
import { sampleObjects } from './samples';

/*
 * Is a Patch rule idempotent? The API server sends an object through the webhook at every change, and an operator
 * comparing its pods with their spec restarts them forever if a rule changes its own result again. Checked where a
 * rule is written (the validating webhook warns on `kubectl apply`; `modrule validate` warns too): the rule (and each
 * controller variant) is applied to each object it matches, then to its own result; a second change is reported with
 * the path it changes. Objects: the user's (modrule validate), else built-in samples (engine/samples.ts). Bounded by
 * one request's budget; not on the request path.
 */

/** Why the rule is not idempotent on one of the objects (the first found); undefined when none shows it. */
export function idempotenceWarning(rule: CompiledRule, given?: readonly JsonObject[]): string | undefined {
  if (rule.type !== 'Patch') return undefined;
  const objects = given ?? sampleObjects(rule.namespace || 'default');
  const budget = new RequestBudget(DEFAULT_BUDGET);
  try {
    for (const member of [rule, ...(rule.variants ?? [])])
      for (const object of objects) {
        const path = secondChange(member, object, budget);
        if (path === undefined) continue;
        const what = `${String(object.kind)} ${String(isJsonObject(object.metadata) ? object.metadata.name : '')}`;
        const by = member.podController ? ` (as its ${member.podController.kind} variant)` : '';
        const at = path.length > 80 ? `${path.slice(0, 77)}...` : path;
        return (
          `not idempotent: applied to its own result${by} it changes ${at} again ` +
          `(${given ? '' : 'sample '}${what}); guard it with a match item its result fails (docs: Idempotency)`
        );
      }
  } catch {
    // Out of budget, or a rule that fails on these objects: nothing to say about idempotence.
  }
  return undefined;
}

/** The path the rule changes when applied to its own result on this object; undefined when it does not. */
function secondChange(rule: CompiledRule, object: JsonObject, request: RequestBudget): string | undefined {
  const namespace = namespaceOf(object) || rule.namespace;
  const once = applied(rule, { ...object, [SYNTHETIC_REFS]: {} }, namespace, request);
  if (!once) return undefined;
  const twice = applied(rule, once, namespace, request);
  if (!twice || jsonEqual(once, twice)) return undefined;
  const { [SYNTHETIC_REFS]: _a, ...before } = once;
  const { [SYNTHETIC_REFS]: _b, ...after } = twice;
  return createPatch(before, after)[0]?.path;
}

/** The rule applied to the object when it matches; undefined when it does not (or fails there). */
function applied(
  rule: CompiledRule,
  object: JsonObject,
  namespace: string,
  request: RequestBudget,
): JsonObject | undefined {
  if (!ruleMatches(rule, object, new SelectCache(object, request))) return undefined;
  const budget: Budget = { remaining: MAX_OPERATIONS_PER_REQUEST, request };
  try {
    const out = applyOperations(object, resolveOperations(rule, object, namespace, budget), request);
    return isJsonObject(out) ? out : undefined;
  } catch {
    return undefined;
  }
}
