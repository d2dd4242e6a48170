// Warnings for valid ModRules: legal, accepted by the webhook, but almost certainly not what the author meant.
// Offline only (`modrule validate`); nothing here runs at admission.
import { isJsonObject, jsonEqual, JsonValue } from '../util/json';
import { JsonPathNode } from '../jsonpath';
import { CompiledRule, placeholderCapacity } from './compile';

/** A warning about one rule, with the field it is about. */
export interface LintWarning {
  field: string;
  message: string;
}

type StaticType = 'boolean' | 'number' | 'unknown';

const BOOLEAN_OPERATORS = new Set(['||', '&&', '==', '!=', '<', '<=', '>', '>=', '=~', '!~', 'in']);
const NUMERIC_OPERATORS = new Set(['-', '*', '/', '%']);
// How Go's fmt prints a number (what matchValue is compared with).
const NUMBER_TEXT = /^-?(\d+(\.\d+)?([eE][+-]?\d+)?|\+Inf|-Inf|NaN)$/;

/** The type a select always yields, when its form alone says so (comparisons, functions, arithmetic). */
export function staticType(node: JsonPathNode): StaticType {
  switch (node.kind) {
    case 'binary':
      if (BOOLEAN_OPERATORS.has(node.op)) return 'boolean';
      return NUMERIC_OPERATORS.has(node.op) ? 'number' : 'unknown';
    case 'unary':
      return node.op === '!' ? 'boolean' : 'number';
    case 'call':
      return node.name === 'length' ? 'number' : 'boolean';
    case 'literal':
      return typeof node.value === 'boolean'
        ? 'boolean'
        : typeof node.value === 'number'
          ? 'number'
          : 'unknown';
    default:
      return 'unknown';
  }
}

/** Warnings about one valid rule: match items that can never compare, `#N` placeholders never used. */
export function lintModRule(rule: CompiledRule): LintWarning[] {
  const warnings: LintWarning[] = [];
  rule.match.forEach((item, i) => {
    const at = `spec.match[${i}]`;
    const type = staticType(item.select.ast);
    const field =
      item.matchValue !== undefined
        ? 'matchValue'
        : item.matchValues !== undefined
          ? 'matchValues'
          : item.matchRegex !== undefined
            ? 'matchRegex'
            : undefined;
    if (type === 'boolean' && field) {
      warnings.push({
        field: `${at}.${field}`,
        message: `never compared: the select yields true or false, and the item matches when it is ${item.negate ? 'false' : 'true'}`,
      });
    }
    if (type === 'number') {
      const texts = item.matchValue !== undefined ? [item.matchValue] : (item.matchValues ?? []);
      if (texts.length > 0 && !texts.some((t) => NUMBER_TEXT.test(t))) {
        warnings.push({
          field: `${at}.${item.matchValue !== undefined ? 'matchValue' : 'matchValues'}`,
          message: `can never match: the select yields a number and ${texts.map((t) => JSON.stringify(t)).join(', ')} is not one`,
        });
      }
    }
  });

  const rawPatch = isJsonObject(rule.source?.spec)
    ? (rule.source.spec as { patch?: JsonValue }).patch
    : undefined;
  rule.patch.forEach((op, i) => {
    const at = `spec.patch[${i}]`;
    const raw = Array.isArray(rawPatch) && isJsonObject(rawPatch[i]) ? rawPatch[i] : {};
    const value = typeof raw.value === 'string' ? raw.value : '';
    const inPath = [...op.path.matchAll(/#(\d+)/g)].map((m) => Number(m[1]));
    if (!op.select) {
      if (inPath.length > 0)
        warnings.push({
          field: `${at}.path`,
          message: `#${inPath[0]} is literal text here: placeholders are filled only when the operation has a select`,
        });
      return;
    }
    const captured = placeholderCapacity(op.select);
    if (captured === 0 || /SelectKeyParts/.test(value)) return;
    const used = new Set([...inPath, ...[...value.matchAll(/\.#(\d+)/g)].map((m) => Number(m[1]))]);
    for (let k = 0; k < captured; k++) {
      if (used.has(k)) continue;
      warnings.push({
        field: `${at}.path`,
        message: `placeholder #${k} is never used: the select captures it, but neither path nor value refers to it, so every result it tells apart writes to the same place`,
      });
    }
  });
  return warnings;
}

/** Patch rules whose patch is identical to that of a rule of an earlier tier in the same namespace. */
export function findShadowedRules(
  rules: readonly CompiledRule[],
): Array<{ rule: CompiledRule; warning: LintWarning }> {
  const out: Array<{ rule: CompiledRule; warning: LintWarning }> = [];
  const patchOf = (r: CompiledRule): JsonValue =>
    isJsonObject(r.source?.spec) ? ((r.source.spec as { patch?: JsonValue }).patch ?? null) : null;
  for (const rule of rules) {
    if (rule.type !== 'Patch') continue;
    const earlier = rules.find(
      (other) =>
        other.type === 'Patch' &&
        other.namespace === rule.namespace &&
        other.tier < rule.tier &&
        jsonEqual(patchOf(other), patchOf(rule)),
    );
    if (earlier) {
      out.push({
        rule,
        warning: {
          field: 'spec.patch',
          message: `identical to the patch of ModRule ${earlier.key} (tier ${earlier.tier}), which runs first: where both match, this rule changes nothing`,
        },
      });
    }
  }
  return out;
}
