import type { CompiledJsonPath } from '../jsonpath';
import { compileSharedTemplate, CompiledTemplate, SharedTemplate } from '../template';
import { isAmbiguous } from '../jsonpath/ast';
import type { RequestBudget } from '../util/budget';
import { escapeToken, parsePointer } from '../patch/pointer';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { Interner } from '../util/interner';
import { parseModRuleValue } from './value';
import type { PatchOperation, PatchOperationType } from './types';
import type { CompiledPatchOperation, CompiledValue, PathToken } from './compiled';
import {
  countOf,
  describe,
  Report,
  tryJsonPath,
  tryTemplate,
  unknownField,
  valueNotStringHint,
} from './field-checks';
import { messageOf } from '../util/errors';

const PATCH_FIELDS = new Set(['op', 'select', 'path', 'value']);
const PATCH_OPS: readonly PatchOperationType[] = ['add', 'replace', 'remove'];
const PLACEHOLDER = /#(\d+)/g;
// KubeMod rewrites `.#0` in value templates to the select's first captured index.
const TEMPLATE_PLACEHOLDER = /\.#(\d+)/g;
// Objects and arrays of constant values, shared by value text across rules.
const constants = new Interner<JsonObject | JsonValue[]>();

/** Rewrites KubeMod's `.#N` shorthand inside `{{ }}` actions to `(index .SelectKeyParts N)`; other text stays. */
export function preprocessValueTemplate(source: string): string {
  // KubeMod rewrites the whole text, so `file.#0 {{ .Namespace }}` became `file(index .SelectKeyParts 0) ...`.
  return source.replace(/\{\{[^]*?(?:\}\}|$)/g, (action) =>
    action.replace(TEMPLATE_PLACEHOLDER, '(index .SelectKeyParts $1)'),
  );
}

/** One operation of spec.patch compiled, or undefined with its problems reported. */
export function compilePatchOperation(
  item: unknown,
  at: string,
  problem: Report,
): CompiledPatchOperation | undefined {
  if (!isJsonObject(item)) {
    problem(at, 'must be an object with op and path');
    return undefined;
  }
  const before = countOf(problem);
  for (const key of Object.keys(item)) {
    if (!PATCH_FIELDS.has(key)) problem(`${at}.${key}`, unknownField(key, PATCH_FIELDS));
  }
  const p = item as Partial<Record<keyof PatchOperation, JsonValue>>;
  const op = p.op;
  if (typeof op !== 'string' || !(PATCH_OPS as readonly string[]).includes(op)) {
    problem(`${at}.op`, `must be one of add, replace, remove, got ${describe(op)}`);
  }

  let select: CompiledJsonPath | undefined;
  if (p.select !== undefined && p.select !== null && p.select !== '') {
    if (typeof p.select !== 'string') problem(`${at}.select`, 'must be a string');
    else select = tryJsonPath(p.select, `${at}.select`, problem);
  }

  let tokens: PathToken[] = [];
  let hasPlaceholders = false;
  const path = p.path;
  if (typeof path !== 'string' || path === '') {
    problem(`${at}.path`, 'required: a JSON pointer such as /metadata/labels/app');
  } else if (!path.startsWith('/')) {
    problem(`${at}.path`, `must start with "/": ${path}`);
  } else {
    let raw: string[] = [];
    try {
      // The last token is mostly the rule's own (an annotation or label name); the others repeat across rules.
      raw = parsePointer(path).map((t, i, all) => (i < all.length - 1 ? sharedToken(t) : t));
    } catch (err) {
      problem(`${at}.path`, messageOf(err));
    }
    // Without a select KubeMod uses the path as it is: `#0` is then literal text (README, patch section).
    if (p.select !== undefined && p.select !== null && p.select !== '') {
      const limit = select ? placeholderCapacity(select) : Infinity;
      tokens = raw.map((t) => splitPlaceholders(t));
      for (const t of tokens) {
        if (typeof t === 'string') continue;
        hasPlaceholders = true;
        for (const part of t) {
          if (typeof part === 'number' && part >= limit) {
            problem(`${at}.path`, `placeholder #${part} has no match: ${capturesText(limit)}`);
          }
        }
      }
    } else {
      tokens = raw;
    }
  }

  let value: CompiledValue | SharedTemplate = NO_VALUE;
  const rawValue = p.value;
  if (op === 'add' || op === 'replace') {
    if (rawValue === undefined || rawValue === null) {
      problem(`${at}.value`, `required for ${op}`);
    } else if (typeof rawValue !== 'string') {
      problem(
        `${at}.value`,
        `must be a string holding YAML, got ${describe(rawValue)}${valueNotStringHint(rawValue)}`,
      );
    } else if (rawValue.includes('{{')) {
      const source = preprocessValueTemplate(rawValue);
      const template = tryTemplate(
        () => compileSharedTemplate(source, path as string),
        `${at}.value`,
        problem,
      );
      if (template) value = template;
    } else {
      try {
        value = { kind: 'constant', value: constantValue(rawValue) };
      } catch (err) {
        problem(`${at}.value`, messageOf(err));
      }
    }
  }

  if (countOf(problem) !== before) return undefined;
  return new PatchOp(op as PatchOperationType, tokens.slice(), hasPlaceholders, select, value);
}

const NO_VALUE: CompiledValue = Object.freeze({ kind: 'none' });

/**
 * One compiled operation. The path text is not kept (it is formatted from the tokens for messages), and an
 * operation with a templated value is its own value and template (`value.template` is the operation): the parse
 * tree is shared by text, and the template is named after the operation's path in messages, as before.
 */
class PatchOp implements CompiledPatchOperation {
  constructor(
    readonly op: PatchOperationType,
    readonly tokens: readonly PathToken[],
    readonly hasPlaceholders: boolean,
    readonly select: CompiledJsonPath | undefined,
    // A constant or no value (shared wrapper), or the shared template the operation renders.
    private readonly content: CompiledValue | SharedTemplate,
  ) {}

  get path(): string {
    return pointerText(this.tokens);
  }

  get value(): CompiledValue {
    return this.content instanceof SharedTemplate ? this : this.content;
  }

  // The templated value's view: { kind: 'template', template: this }.
  get kind(): 'template' {
    return 'template';
  }
  get template(): CompiledTemplate {
    return this;
  }
  get source(): string {
    return (this.content as SharedTemplate).source;
  }
  render(data: Record<string, unknown>, budget?: RequestBudget): string {
    return (this.content as SharedTemplate).renderAs(() => this.path, data, budget);
  }
}

/** The path text a token list was parsed from (pointer escapes are canonical; placeholders back as `#N`). */
function pointerText(tokens: readonly PathToken[]): string {
  let out = '';
  for (const t of tokens)
    out +=
      '/' +
      escapeToken(typeof t === 'string' ? t : t.map((p) => (typeof p === 'number' ? `#${p}` : p)).join(''));
  return out;
}

// Path tokens repeat in every rule ("metadata", "annotations"): one string each (short ones, a bounded table).
const tokens = new Map<string, string>();
function sharedToken(token: string): string {
  if (token.length > 64) return token;
  const seen = tokens.get(token);
  if (seen !== undefined) return seen;
  if (tokens.size >= 10_000) tokens.clear();
  tokens.set(token, token);
  return token;
}

// Objects and arrays are shared between rules with the same value text; the engine never mutates values.
function constantValue(text: string): JsonValue {
  const parsed = parseModRuleValue(text);
  if (parsed === null || typeof parsed !== 'object') return parsed;
  return constants.get(text, () => parsed);
}

function capturesText(n: number): string {
  if (n === 0) return 'the select captures no index (no wildcard or filter)';
  return `the select captures ${n} ${n === 1 ? 'index (#0)' : `indices (#0..#${n - 1})`}`;
}

/** Splits a pointer token on `#N` placeholders; a token without any stays a plain string. */
function splitPlaceholders(token: string): PathToken {
  if (!token.includes('#')) return token;
  const parts: Array<string | number> = [];
  let last = 0;
  for (const m of token.matchAll(PLACEHOLDER)) {
    const at = m.index ?? 0;
    if (at > last) parts.push(token.slice(last, at));
    parts.push(Number(m[1]));
    last = at + m[0].length;
  }
  if (parts.length === 0) return token;
  if (last < token.length) parts.push(token.slice(last));
  return parts;
}

/** How many indices a select captures per result: one per wildcard, filter, union, slice or descent of its path. */
export function placeholderCapacity(select: CompiledJsonPath): number {
  const ast = select.ast;
  return ast.kind === 'path' ? ast.segments.filter(isAmbiguous).length : 0;
}
