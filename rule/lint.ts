// Warnings for valid ModRules: legal, accepted by the webhook, but almost certainly not what the author meant.
// Offline only (`modrule validate`); nothing here runs at admission.
import { isJsonObject, jsonEqual, JsonValue } from '../util/json';
import { compileJsonPath, JsonPathNode, parseJsonPath } from '../jsonpath';
import { IMAGE_FUNCTIONS, isAmbiguous } from '../jsonpath/ast';
import { CompiledMatchItem, CompiledRule, placeholderCapacity } from './compile';
import { lintTemplates } from './lint-templates';

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
      return node.name === 'length' ? 'number' : IMAGE_FUNCTIONS.has(node.name) ? 'unknown' : 'boolean';
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

/**
 * Warnings about one valid rule: match items that can never compare, matchFor: All with negate over a select that
 * drops missing values, `#N` placeholders never used, `index` of a map the object may not have.
 */
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
    const hidden = missingHiddenFromAll(item);
    if (hidden) warnings.push({ field: `${at}.select`, message: hidden });
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
  warnings.push(...lintTemplates(rule));
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

/**
 * matchFor: All with negate means "not every element passes", but a select such as
 * `$.spec.containers[*].resources.limits` yields nothing for a container without limits: All then sees only the
 * containers that have them, and the one that does not can never make the item match. The warning suggests the
 * filter form, which selects the failing elements themselves, missing ones included.
 */
function missingHiddenFromAll(item: CompiledMatchItem): string | undefined {
  if (item.matchFor !== 'All' || !item.negate) return undefined;
  const ast = item.select.ast;
  if (ast.kind !== 'path' || ast.root !== '$') return undefined;
  const last = ast.segments.reduce((found, s, i) => (isAmbiguous(s) ? i : found), -1);
  const tail = ast.segments.slice(last + 1);
  // Members after the last wildcard or filter are what can be missing (`..name` searches, by design).
  if (last < 0 || ast.segments[last].type === 'descent' || tail.length === 0) return undefined;
  if (!tail.every((s) => s.type === 'name' || s.type === 'index')) return undefined;
  const parts = splitAtSegment(item.select.source, last);
  if (!parts) return undefined;
  const { base, step, rest } = parts;
  const message =
    `with matchFor: All and negate, an element of ${base}${step} without ${rest} is never seen: the select ` +
    `drops missing values, so such an element cannot make this item match (only all of them missing does)`;
  const suggestion = filterForm(item, parts, ast.segments[last].type);
  return suggestion
    ? `${message}; select the failing elements instead and drop ${['matchFor', 'negate', ...matchField(item)].join(', ')}: select: '${suggestion.replace(/'/g, "''")}'`
    : `${message}; select the failing elements instead with a filter (e.g. [? isUndefined(@${rest})])`;
}

/** The select's text split around its segment `index`: before it, the segment itself, the rest after it. */
function splitAtSegment(
  source: string,
  index: number,
): { base: string; step: string; rest: string } | undefined {
  const segmentsOf = (text: string): number => {
    try {
      const ast = parseJsonPath(text);
      return ast.kind === 'path' ? ast.segments.length : -1;
    } catch {
      return -1;
    }
  };
  // The select is parsed back from cut points, so the user's own spelling (['a'], .a, spaces) is kept.
  const cuts = [...source.matchAll(/[.[]/g)].map((m) => m.index).filter((i) => i > 0);
  const after = cuts.filter((i) => segmentsOf(source.slice(0, i)) === index + 1).pop();
  const before = cuts.filter((i) => segmentsOf(source.slice(0, i)) === index).pop();
  if (after === undefined || before === undefined || before >= after) return undefined;
  return { base: source.slice(0, before), step: source.slice(before, after), rest: source.slice(after) };
}

function matchField(item: CompiledMatchItem): string[] {
  if (item.matchRegex !== undefined) return ['matchRegex'];
  if (item.matchValue !== undefined) return ['matchValue'];
  return item.matchValues !== undefined ? ['matchValues'] : [];
}

// A string literal of the select language: raw (no escapes to get wrong in a regex) unless it holds a backquote.
function literal(text: string): string {
  return text.includes('`') ? JSON.stringify(text) : `\`${text}\``;
}

/** The select of the filter form, or undefined when the last step is not a wildcard or a filter. */
function filterForm(
  item: CompiledMatchItem,
  { base, step, rest }: { base: string; step: string; rest: string },
  type: string,
): string | undefined {
  const value = `@${rest}`;
  // Every comparison with a missing value is false, so its negation selects the missing elements too.
  const fails =
    item.matchRegex !== undefined
      ? `!(${value} =~ ${literal(item.matchRegex.source)})`
      : item.matchValue !== undefined
        ? `!(${value} == ${literal(item.matchValue)})`
        : item.matchValues !== undefined
          ? `!(${item.matchValues.map((v) => `${value} == ${literal(v)}`).join(' || ')})`
          : `isUndefined(${value})`;
  let filter: string;
  if (type === 'wildcard') filter = `[? ${fails}]`;
  else if (type === 'filter') {
    const predicate = /^\[\?\s*([\s\S]*)\]$/.exec(step)?.[1];
    if (predicate === undefined) return undefined;
    filter = `[? (${predicate.trim()}) && ${fails}]`;
  } else return undefined;
  const select = `${base}${filter}`;
  try {
    compileJsonPath(select);
  } catch {
    return undefined;
  }
  return select;
}
