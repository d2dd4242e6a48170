import { AdmissionInput, AdmissionOutcome } from '../engine/admit';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { AdmissionOperation } from '../rule/types';
import { CLUSTER_SCOPED_KINDS } from '../rule/kinds';
import { metadataOf } from '../util/meta';

// One object as the offline commands (apply, post-render, test) admit it, standing in for what the API server
// does before admission: the namespace it fills in, the request admit() sees, the object handed back.

/** The request admit() sees for one object (on DELETE the object is the old one). */
export function admissionInput(
  operation: AdmissionOperation,
  subject: JsonObject,
  old: JsonObject | null,
  namespace: string | null,
): AdmissionInput {
  return {
    operation,
    object: operation === 'DELETE' ? null : subject,
    oldObject: operation === 'DELETE' ? subject : old,
    namespace,
  };
}

/** The object to print for an outcome: the patched object, else the input. */
export function resultObject(outcome: AdmissionOutcome, subject: JsonObject): JsonObject {
  return outcome.allowed && outcome.object ? outcome.object : subject;
}

/** metadata.name (or generateName), '' when absent. */
export function nameOf(obj: JsonObject): string {
  const meta = obj.metadata;
  if (!isJsonObject(meta)) return '';
  if (typeof meta.name === 'string') return meta.name;
  return typeof meta.generateName === 'string' ? meta.generateName : '';
}

/** metadata.namespace when set and not empty. */
export function namespaceOf(obj: JsonObject): string | undefined {
  const meta = obj.metadata;
  return isJsonObject(meta) && typeof meta.namespace === 'string' && meta.namespace !== ''
    ? meta.namespace
    : undefined;
}

/** The namespace an object is admitted in: null for cluster-scoped kinds, else its own or the default. */
export function scope(obj: JsonObject, defaultNamespace: string): string | null {
  if (typeof obj.kind === 'string' && CLUSTER_SCOPED_KINDS.has(obj.kind)) return null;
  return namespaceOf(obj) ?? defaultNamespace;
}

/** kind/namespace/name, to pair objects with their old versions. */
export function identity(obj: JsonObject, namespace: string | null): string {
  return `${String(obj.kind)}/${namespace ?? ''}/${nameOf(obj)}`;
}

/** The object with metadata.namespace filled in, as the API server does before admission. */
export function withNamespace(obj: JsonObject, namespace: string | null): JsonObject {
  if (namespace === null || namespaceOf(obj) !== undefined) return obj;
  const meta = metadataOf(obj);
  return { ...obj, metadata: { ...meta, namespace } };
}

/** Takes the namespace filled in by withNamespace back out of the result. */
export function restoreNamespace(result: JsonObject, input: JsonObject): JsonObject {
  if (namespaceOf(input) !== undefined || !isJsonObject(result.metadata)) return result;
  const meta = input.metadata;
  const hadNone = !isJsonObject(meta) || meta.namespace === undefined;
  const { namespace: _ns, ...rest } = result.metadata;
  return { ...result, metadata: hadNone ? rest : { ...rest, namespace: meta.namespace as JsonValue } };
}
