import { JsonValue } from '../util/json';
import { ManifestSyntaxError, parseYamlValue } from '../util/yaml';

/** Thrown when a patch value (after template rendering) is not a single valid YAML document. */
export class ValueSyntaxError extends Error {}

// Rendered values are mostly names: a plain scalar that starts with a letter and holds only these characters
// (a colon only inside) can be nothing but that string in YAML 1.1, unless it is one of the words below.
const PLAIN_STRING = /^[A-Za-z][A-Za-z0-9_./-]*(?::[A-Za-z0-9_./-]+)*$/;
// YAML 1.1 booleans and null spelled with letters only (any case here: the full parser decides).
const KEYWORD = /^(?:y|yes|n|no|true|false|on|off|null)$/i;

// Scalars the full parser produced, by text: a namespace's rules render the same values request after request.
const MAX_CACHED = 1024;
const MAX_CACHED_LENGTH = 256;
const cache = new Map<string, JsonValue>();

/** Parses a ModRule patch value as KubeMod does (sigs.k8s.io/yaml): '8080' -> 8080, '"8080"' -> "8080", '' -> null. */
export function parseModRuleValue(text: string): JsonValue {
  if (PLAIN_STRING.test(text) && !KEYWORD.test(text)) return text;
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  let value: JsonValue;
  try {
    value = parseYamlValue(text);
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new ValueSyntaxError(`invalid YAML: ${err.message}`);
    throw err;
  }
  // Only scalars: objects and arrays would be shared between requests.
  if ((value === null || typeof value !== 'object') && text.length <= MAX_CACHED_LENGTH) {
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(text, value);
  }
  return value;
}
