import Ajv, { ErrorObject } from 'ajv';
import { JsonObject, JsonValue, isJsonObject } from '../util/json';

// Validates objects against a CRD's openAPIV3Schema the way the API server does, closely enough for
// tests: `nullable` becomes a null type, `x-kubernetes-*` hints are dropped, and unknown fields are
// errors (kubectl's default strict field validation).

/** One schema violation: where (JSON pointer into the object) and which keyword failed. */
export interface SchemaProblem {
  path: string;
  keyword: string;
  message: string;
}

/** Converts a structural OpenAPI v3 schema into plain JSON Schema for ajv. */
export function toJsonSchema(schema: JsonValue): JsonValue {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (!isJsonObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-kubernetes-') || key === 'nullable') continue;
    // Under `properties` every key is a field name, not a keyword.
    out[key] =
      key === 'properties' && isJsonObject(value) ? mapValues(value, toJsonSchema) : toJsonSchema(value);
  }
  if (schema.nullable === true && typeof schema.type === 'string') {
    out.type = [schema.type, 'null'];
    if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
  }
  if (
    isJsonObject(schema.properties) &&
    schema.additionalProperties === undefined &&
    schema['x-kubernetes-preserve-unknown-fields'] !== true
  )
    out.additionalProperties = false;
  return out;
}

function mapValues(obj: JsonObject, f: (v: JsonValue) => JsonValue): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) out[k] = f(v);
  return out;
}

/** Problems found by a schema (none = valid). */
export type SchemaValidator = (obj: JsonValue) => SchemaProblem[];

/** A validator for the schema of `version` (default: the storage version) of a CustomResourceDefinition. */
export function crdValidator(crd: JsonObject, version?: string): SchemaValidator {
  const spec = crd.spec;
  const versions =
    isJsonObject(spec) && Array.isArray(spec.versions) ? spec.versions.filter(isJsonObject) : [];
  const v = versions.find((x) => (version === undefined ? x.storage === true : x.name === version));
  const schema = v && isJsonObject(v.schema) ? v.schema.openAPIV3Schema : undefined;
  if (!isJsonObject(schema))
    throw new Error(`CRD has no openAPIV3Schema for ${version ?? 'its storage version'}`);
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  const validate = ajv.compile(toJsonSchema(schema) as object);
  return (obj) => {
    if (validate(obj)) return [];
    return (validate.errors ?? []).map((e: ErrorObject) => ({
      path: e.instancePath,
      keyword: e.keyword,
      message: e.message ?? e.keyword,
    }));
  };
}

/** Every node of a structural schema must say its type; returns the JSON pointers of those that do not. */
export function untypedSchemaNodes(schema: JsonValue, at = ''): string[] {
  if (!isJsonObject(schema)) return [];
  const out: string[] = [];
  const preserves =
    schema['x-kubernetes-preserve-unknown-fields'] === true || schema['x-kubernetes-int-or-string'] === true;
  if (typeof schema.type !== 'string' && !preserves) out.push(at || '/');
  if (isJsonObject(schema.properties)) {
    for (const [k, v] of Object.entries(schema.properties))
      out.push(...untypedSchemaNodes(v, `${at}/properties/${k}`));
  }
  if (schema.items !== undefined) out.push(...untypedSchemaNodes(schema.items, `${at}/items`));
  if (isJsonObject(schema.additionalProperties))
    out.push(...untypedSchemaNodes(schema.additionalProperties, `${at}/additionalProperties`));
  return out;
}
