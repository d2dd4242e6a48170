import type { JsonPathNode } from '../jsonpath';
import type { CompiledMatchItem } from './compiled';
import { SafeRegex } from '../util/regex';

/**
 * What one criteria item says about a fixed field of the object: the values it must have (`values`), a regex it must
 * match (`regex`), or nothing (null: the item does not constrain the field). Only items whose verdict follows from
 * the field alone are read; anything else (negation, wildcards, other paths, functions) pins nothing, so the scope
 * stays as wide as the field allows: never narrower than the engine.
 */
export type Pin = { readonly values: ReadonlySet<string> } | { readonly regex: SafeRegex } | null;

/** The fields the scope can use: the request's kind, its apiVersion (group) and its namespace. */
export type PinnedField = 'kind' | 'apiVersion' | 'namespace';

const FIELD_PATHS: Record<PinnedField, readonly string[]> = {
  kind: ['kind'],
  apiVersion: ['apiVersion'],
  namespace: ['metadata', 'namespace'],
};

function isFieldPath(node: JsonPathNode, field: PinnedField): boolean {
  const names = FIELD_PATHS[field];
  return (
    node.kind === 'path' &&
    node.root === '$' &&
    node.segments.length === names.length &&
    node.segments.every((s, i) => s.type === 'name' && s.name === names[i])
  );
}

function stringLiteral(node: JsonPathNode): string | undefined {
  return node.kind === 'literal' && typeof node.value === 'string' ? node.value : undefined;
}

/** Values a boolean select pins the field to (`$.kind == "X"`, `$.kind in ["X", "Y"]`, && and ||), or null. */
function expressionPin(node: JsonPathNode, field: PinnedField): ReadonlySet<string> | null {
  if (node.kind !== 'binary') return null;
  switch (node.op) {
    case '==': {
      const value = isFieldPath(node.left, field)
        ? stringLiteral(node.right)
        : isFieldPath(node.right, field)
          ? stringLiteral(node.left)
          : undefined;
      return value === undefined ? null : new Set([value]);
    }
    case 'in': {
      if (!isFieldPath(node.left, field) || node.right.kind !== 'array') return null;
      const values = node.right.items.map(stringLiteral);
      return values.every((v) => v !== undefined) ? new Set(values as string[]) : null;
    }
    case '&&': {
      const left = expressionPin(node.left, field);
      const right = expressionPin(node.right, field);
      if (!left) return right;
      if (!right) return left;
      return new Set([...left].filter((v) => right.has(v)));
    }
    case '||': {
      const left = expressionPin(node.left, field);
      const right = expressionPin(node.right, field);
      return left && right ? new Set([...left, ...right]) : null;
    }
    default:
      return null;
  }
}

/**
 * The pin one criteria item puts on a field. The engine (engine/match.ts) matches a definite path's single string
 * value against matchValue / matchValues / matchRegex, and a boolean select by its value; a negated item can
 * match objects whatever the field holds, so it pins nothing.
 */
export function itemPin(item: CompiledMatchItem, field: PinnedField): Pin {
  if (item.negate) return null;
  const ast = item.select.ast;
  if (isFieldPath(ast, field)) {
    if (item.matchValue !== undefined) return { values: new Set([item.matchValue]) };
    if (item.matchValues !== undefined) return { values: new Set(item.matchValues) };
    if (item.matchRegex !== undefined) return { regex: item.matchRegex };
    return null;
  }
  const values = expressionPin(ast, field);
  return values ? { values } : null;
}

/** The values every item allows, or null when no item pins the field to a list of values. */
export function pinnedValues(match: readonly CompiledMatchItem[], field: PinnedField): Set<string> | null {
  let out = null as Set<string> | null;
  for (const item of match) {
    const pin = itemPin(item, field);
    if (!pin || !('values' in pin)) continue;
    const allowed: ReadonlySet<string> = pin.values;
    out = out === null ? new Set(allowed) : new Set([...out].filter((v: string) => allowed.has(v)));
  }
  return out;
}

/** The regexes items require the field to match (values pins are read by pinnedValues). */
export function pinnedRegexes(match: readonly CompiledMatchItem[], field: PinnedField): SafeRegex[] {
  const out: SafeRegex[] = [];
  for (const item of match) {
    const pin = itemPin(item, field);
    if (pin && 'regex' in pin) out.push(pin.regex);
  }
  return out;
}
