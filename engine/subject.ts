import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { IGNORE_LABEL, NODE_REF_ANNOTATION } from '../rule/types';
import { RuleSnapshot } from '../store/rules';

// The object the rules see, and back: which namespace's rules apply, exemption, syntheticRefs and managedFields.

/** Where the injected Namespace and Node manifests live in the object the rules see. */
export const SYNTHETIC_REFS = 'syntheticRefs';

/**
 * The namespace whose rules apply (null = cluster-scoped). KubeMod treats Namespace objects as cluster-scoped even
 * though UPDATE requests carry their own name as namespace.
 */
export function scopeOf(namespace: string | null, subject: JsonObject): string | null {
  if (subject.kind === 'Namespace' && subject.apiVersion === 'v1') return null;
  return namespace === '' ? null : namespace;
}

function labelsOf(obj: JsonObject | undefined): JsonObject | undefined {
  const meta = obj?.metadata;
  return isJsonObject(meta) && isJsonObject(meta.labels) ? meta.labels : undefined;
}

/** The object's metadata.annotations, when it has them. */
export function annotationsOf(obj: JsonObject): JsonObject | undefined {
  const meta = obj.metadata;
  return isJsonObject(meta) && isJsonObject(meta.annotations) ? meta.annotations : undefined;
}

/**
 * Whether the object is exempt (label admission.kubemod.io/ignore=true on its namespace, or on itself for Namespace
 * objects). The webhook's namespaceSelector does this in a cluster; doing it here keeps `serve --local` and `apply`
 * alike.
 */
export function isIgnored(namespace: string | null, subject: JsonObject, snapshot: RuleSnapshot): boolean {
  const labels =
    namespace === null
      ? subject.kind === 'Namespace'
        ? labelsOf(subject)
        : undefined
      : labelsOf(snapshot.namespace(namespace));
  return labels?.[IGNORE_LABEL] === 'true';
}

/** The object the rules see, plus what finish() needs to turn it back into what the API server stores. */
export interface Working {
  object: JsonObject;
  managedFields: JsonValue | undefined;
  managedFieldsAt: number;
  originalRefs: JsonValue | undefined;
}

/** The object the rules see: managedFields dropped (KubeMod does too: noise, slow to match), syntheticRefs injected. */
export function prepare(subject: JsonObject, namespace: string | null, snapshot: RuleSnapshot): Working {
  const refs: JsonObject = {};
  if (namespace !== null) {
    const ns = snapshot.namespace(namespace);
    if (ns) refs.namespace = ns;
  }
  if (subject.kind === 'Pod') {
    const nodeName = annotationsOf(subject)?.[NODE_REF_ANNOTATION];
    const node = typeof nodeName === 'string' ? snapshot.node(nodeName) : undefined;
    if (node) refs.node = node;
  }
  const object: JsonObject = { ...subject, [SYNTHETIC_REFS]: refs };
  let managedFields: JsonValue | undefined;
  let managedFieldsAt = 0;
  const meta = subject.metadata;
  if (isJsonObject(meta) && meta.managedFields !== undefined) {
    const { managedFields: mf, ...rest } = meta;
    managedFields = mf;
    managedFieldsAt = Object.keys(meta).indexOf('managedFields');
    object.metadata = rest;
  }
  return { object, managedFields, managedFieldsAt, originalRefs: subject[SYNTHETIC_REFS] };
}

/**
 * Back to what the API server should store: no syntheticRefs (even if a rule patched under it), managedFields
 * restored. `current` stays as it is: Reject rules still match against it, syntheticRefs included.
 */
export function finish(current: JsonObject, working: Working): JsonObject {
  const { [SYNTHETIC_REFS]: _refs, ...final } = current;
  if (working.originalRefs !== undefined) final[SYNTHETIC_REFS] = working.originalRefs;
  if (working.managedFields !== undefined && isJsonObject(final.metadata)) {
    final.metadata = insertKey(
      final.metadata,
      'managedFields',
      working.managedFields,
      working.managedFieldsAt,
    );
  }
  return final;
}

// Puts a key back where it was, so manifests printed from the result keep their field order.
function insertKey(obj: JsonObject, key: string, value: JsonValue, at: number): JsonObject {
  const out: JsonObject = {};
  const keys = Object.keys(obj).filter((k) => k !== key);
  keys.splice(Math.min(at, keys.length), 0, key);
  for (const k of keys) out[k] = k === key ? value : obj[k];
  return out;
}
