import { parseDocument, Tags } from 'yaml';
import { JsonValue } from '../json/value';

/** Thrown when a patch value (after template rendering) is not a single valid YAML document. */
export class ValueSyntaxError extends Error {}

// KubeMod converts values with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1): yes/no/on/off are booleans, 0777 is octal.
// go-yaml v2 does not resolve timestamps or sexagesimal numbers for untyped values, so those stay strings here too.
const yamlOptions = {
  version: '1.1' as const,
  customTags: (tags: Tags): Tags =>
    tags.filter((t) => !(typeof t === 'object' && (/timestamp$/.test(t.tag) || t.format === 'TIME'))),
  uniqueKeys: false,
};

// Values come from tenants' rules: cap alias expansion so a YAML bomb cannot blow up memory.
const MAX_ALIAS_COUNT = 100;

/** Parses a ModRule patch value ('8080' -> 8080, '"8080"' -> "8080", '' -> null, block YAML -> object). */
export function parseModRuleValue(text: string): JsonValue {
  const doc = parseDocument(text, yamlOptions);
  if (doc.errors.length > 0) {
    throw new ValueSyntaxError(`invalid YAML: ${firstLine(doc.errors[0].message)}`);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    throw new ValueSyntaxError(`invalid YAML: ${firstLine((err as Error).message)}`);
  }
  return toJson(value, '');
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}

// YAML can express things JSON cannot (NaN, binary, sets); reject them rather than send a broken patch.
function toJson(v: unknown, where: string): JsonValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new ValueSyntaxError(`value${where} is not a finite number`);
    return v;
  }
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map((x, i) => toJson(x, `${where}[${i}]`));
  if (v instanceof Map) {
    const out: Record<string, JsonValue> = {};
    for (const [k, x] of v) setKey(out, String(k), toJson(x, `${where}.${String(k)}`));
    return out;
  }
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, JsonValue> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>))
      setKey(out, k, toJson(x, `${where}.${k}`));
    return out;
  }
  throw new ValueSyntaxError(`value${where} has no JSON representation`);
}

// A key named __proto__ must become an own property, not replace the prototype.
function setKey(o: Record<string, JsonValue>, k: string, v: JsonValue): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}
