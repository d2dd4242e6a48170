import { JsonValue } from '../json/value';
import { ManifestSyntaxError, parseYamlValue } from '../manifest/yaml';

/** Thrown when a patch value (after template rendering) is not a single valid YAML document. */
export class ValueSyntaxError extends Error {}

/** Parses a ModRule patch value as KubeMod does (sigs.k8s.io/yaml): '8080' -> 8080, '"8080"' -> "8080", '' -> null. */
export function parseModRuleValue(text: string): JsonValue {
  try {
    return parseYamlValue(text);
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new ValueSyntaxError(`invalid YAML: ${err.message}`);
    throw err;
  }
}
