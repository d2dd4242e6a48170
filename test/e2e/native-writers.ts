import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../../util/json';

/*
 * On an existing cluster the differential harness is not the only writer of its objects: between a create and its
 * update the controller-manager writes a Deployment's status and revision annotation, the scheduler a Pod's
 * PodScheduled condition, each when it gets to it, so on one side and not (yet) on the other. The API server records
 * who set which field (managedFields); the harness writes under its own field manager, and the comparison leaves out
 * the fields another manager owns. What the harness sent, the API server's defaults and what admission (the webhook
 * or the policy) changed stay compared: mutations are not attributed to another manager. On a control plane without
 * controllers nothing is left out.
 */

/** The field manager of the harness's writes. */
export const HARNESS_MANAGER = 'modrule-diff';

/** The managedFields entries of managers other than `ours`. */
export function othersEntries(obj: JsonObject, ours = HARNESS_MANAGER): JsonObject[] {
  const meta = obj.metadata;
  const entries = isJsonObject(meta) && Array.isArray(meta.managedFields) ? meta.managedFields : [];
  return entries.filter(
    (e): e is JsonObject => isJsonObject(e) && e.manager !== ours && isJsonObject(e.fieldsV1),
  );
}

/**
 * The object without the fields the given entries own (by default its own entries of other managers). Two sides'
 * outcomes are stripped of the union of both sides' entries: another writer that got to one side's object and not
 * yet to the other's (or set a field to the value it had) leaves the same fields out of both.
 */
export function withoutOthersFields(obj: JsonObject, others = othersEntries(obj)): JsonObject {
  if (others.length === 0) return obj;
  let out = cloneJson(obj);
  for (const e of others) out = strip(out, e.fieldsV1 as JsonObject) as JsonObject;
  return out;
}

const isEmpty = (v: JsonValue): boolean =>
  (Array.isArray(v) && v.length === 0) || (isJsonObject(v) && Object.keys(v).length === 0);

/**
 * `value` without what the fieldsV1 set `fields` names: f:<name> a member, k:<keys> the list item with those key
 * values, v:<value> the set item equal to it, i:<n> the n-th item; a member or item whose own "." is owned goes
 * when nothing of someone else is left in it.
 */
function strip(value: JsonValue, fields: JsonObject): JsonValue | undefined {
  const owned = (child: JsonValue) =>
    isJsonObject(child) && (Object.keys(child).length === 0 || '.' in child);
  const rest = (v: JsonValue, child: JsonValue): JsonValue | undefined => {
    if (!isJsonObject(child) || Object.keys(child).length === 0) return undefined; // a leaf: all of it
    const left = strip(v, child);
    return left === undefined || (owned(child) && isEmpty(left)) ? undefined : left;
  };
  if (isJsonObject(value)) {
    const out: JsonObject = { ...value };
    for (const [key, child] of Object.entries(fields)) {
      if (!key.startsWith('f:')) continue;
      const name = key.slice(2);
      if (!(name in out)) continue;
      const left = rest(out[name], child);
      if (left === undefined) delete out[name];
      else out[name] = left;
    }
    return out;
  }
  if (Array.isArray(value)) {
    const out: Array<JsonValue | undefined> = [...value];
    for (const [key, child] of Object.entries(fields)) {
      const at = itemIndex(value, key);
      if (at >= 0) out[at] = rest(value[at], child);
    }
    return out.filter((v): v is JsonValue => v !== undefined);
  }
  return value;
}

function itemIndex(list: JsonValue[], key: string): number {
  const text = key.slice(2);
  if (key.startsWith('i:')) return Number(text);
  if (key.startsWith('v:')) return list.findIndex((v) => JSON.stringify(v) === text);
  if (!key.startsWith('k:')) return -1;
  const wanted = JSON.parse(text) as JsonObject;
  return list.findIndex(
    (v) =>
      isJsonObject(v) && Object.entries(wanted).every(([k, w]) => JSON.stringify(v[k]) === JSON.stringify(w)),
  );
}
