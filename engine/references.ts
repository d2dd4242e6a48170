import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { metaString, namespaceOf } from '../util/meta';
import type { CompiledRule, RuleReferences } from '../rule/compile';
import type { ReferenceReader } from '../store/references';
import { SelectCache } from '../jsonpath/select-cache';
import { SYNTHETIC_REFS } from './subject';

export type { ReferenceReader } from '../store/references';

/*
 * What a rule sees of other objects: its declared references (spec.references) and its object's controlling owner
 * chain (syntheticRefs.owner), looked up in caches, never fetched. Only the rules that read them get them: each such
 * rule is evaluated on a view of the object with its own references added under syntheticRefs; every other rule
 * sees the object as before.
 */

/** A reader that finds nothing: every reference is absent (no cache given). */
export const NO_REFERENCES: ReferenceReader = { get: () => undefined, select: () => [] };

/** The controlling ownerReference of an object (controller: true), when it has one. */
export function controllerOf(
  obj: JsonObject,
): { group: string; version: string; kind: string; name: string; uid: string } | undefined {
  const meta = obj.metadata;
  const refs = isJsonObject(meta) ? meta.ownerReferences : undefined;
  if (!Array.isArray(refs)) return undefined;
  for (const r of refs) {
    if (!isJsonObject(r) || r.controller !== true) continue;
    if (typeof r.apiVersion !== 'string' || typeof r.kind !== 'string' || typeof r.name !== 'string')
      return undefined;
    const slash = r.apiVersion.indexOf('/');
    return {
      group: slash < 0 ? '' : r.apiVersion.slice(0, slash),
      version: slash < 0 ? r.apiVersion : r.apiVersion.slice(slash + 1),
      kind: r.kind,
      name: r.name,
      uid: typeof r.uid === 'string' ? r.uid : '',
    };
  }
  return undefined;
}

/**
 * The owner chain of `obj` in `namespace`, `levels` deep: the controlling owner's manifest, carrying its own owner as
 * syntheticRefs.owner, and so on. Stops at a missing owner, at an owner whose uid differs (a newer object of the same
 * name is not the owner), and at a loop. Cached manifests are never written: a level that carries the next is a copy.
 */
export function ownerChain(
  obj: JsonObject,
  namespace: string,
  reader: ReferenceReader,
  levels: number,
  seen: Set<string> = new Set([metaString(obj, 'uid')]),
): JsonObject | undefined {
  if (levels <= 0) return undefined;
  const ref = controllerOf(obj);
  if (!ref) return undefined;
  // A namespaced object's owner is in its namespace, or cluster-scoped (held under '').
  const owner =
    reader.get(ref.group, ref.kind, namespace, ref.name) ??
    (namespace === '' ? undefined : reader.get(ref.group, ref.kind, '', ref.name));
  if (!owner) return undefined;
  const uid = metaString(owner, 'uid');
  if (ref.uid !== '' && uid !== ref.uid) return undefined;
  if (seen.has(uid || `${ref.group}/${ref.kind}/${ref.name}`)) return undefined;
  seen.add(uid || `${ref.group}/${ref.kind}/${ref.name}`);
  const next = ownerChain(owner, namespaceOf(owner), reader, levels - 1, seen);
  return next ? { ...owner, [SYNTHETIC_REFS]: { owner: next } } : owner;
}

/** What one set of references puts under syntheticRefs for an object (absent references are left out). */
export function referenceValues(
  refs: RuleReferences,
  obj: JsonObject,
  namespace: string,
  reader: ReferenceReader,
): JsonObject {
  const out: JsonObject = {};
  if (refs.owner.levels > 0) {
    const owner = ownerChain(obj, namespace, reader, refs.owner.levels);
    if (owner) out.owner = owner;
  }
  for (const decl of refs.named) {
    if (decl.objectName !== undefined) {
      const found = reader.get(decl.group, decl.kind, decl.namespace, decl.objectName);
      if (found) out[decl.name] = found;
    } else {
      out[decl.name] = reader.select(decl) as JsonValue[];
    }
  }
  return out;
}

/** The object with `values` added under syntheticRefs (a new top-level object; nothing is written). */
export function withReferences(obj: JsonObject, values: JsonObject): JsonObject {
  const refs = obj[SYNTHETIC_REFS];
  return { ...obj, [SYNTHETIC_REFS]: { ...(isJsonObject(refs) ? refs : {}), ...values } };
}

/**
 * The views of one request: per object version and set of references (rules with equal references share one set),
 * the object with those references and its select cache, made once.
 */
export class ReferenceViews {
  private root: JsonObject | undefined;
  private readonly views = new Map<RuleReferences, SelectCache>();
  // Values per set of references, with the ownerReferences they were looked up for: a rule's patch changes the
  // object, rarely its ownerReferences (kept by identity when untouched), so the lookups are made once a request.
  private readonly values = new Map<RuleReferences, { owners: JsonValue | undefined; values: JsonObject }>();

  constructor(
    private readonly reader: ReferenceReader,
    /** The object's namespace ('' for cluster-scoped): owners are looked up there. */
    private readonly namespace: string,
  ) {}

  /** The select cache a rule sees `base` through: `base` itself for rules without references. */
  selectsFor(rule: CompiledRule, base: SelectCache): SelectCache {
    const refs = rule.references;
    if (!refs) return base;
    const root = base.root as JsonObject;
    if (root !== this.root) {
      this.root = root;
      this.views.clear();
    }
    let view = this.views.get(refs);
    if (!view) {
      view = new SelectCache(withReferences(root, this.valuesFor(refs, root)), base.budget);
      this.views.set(refs, view);
    }
    return view;
  }

  /** The object a rule's patch is computed against: `obj` with the rule's references. */
  objectFor(rule: CompiledRule, obj: JsonObject): JsonObject {
    const refs = rule.references;
    if (!refs) return obj;
    return withReferences(obj, this.valuesFor(refs, obj));
  }

  private valuesFor(refs: RuleReferences, obj: JsonObject): JsonObject {
    const owners = refs.owner.levels > 0 ? ownerReferencesOf(obj) : undefined;
    const hit = this.values.get(refs);
    if (hit && hit.owners === owners) return hit.values;
    const values = referenceValues(refs, obj, this.namespace, this.reader);
    this.values.set(refs, { owners, values });
    return values;
  }
}

function ownerReferencesOf(obj: JsonObject): JsonValue | undefined {
  const meta = obj.metadata;
  return isJsonObject(meta) ? meta.ownerReferences : undefined;
}
