import { compileJsonPath, CompiledJsonPath, JsonPathSyntaxError } from '../jsonpath';
import { isAmbiguous } from '../jsonpath/ast';
import {
  compileSharedTemplate,
  compileTemplate,
  CompiledTemplate,
  SharedTemplate,
  TemplateSyntaxError,
} from '../template';
import type { RequestBudget } from '../util/budget';
import { escapeToken, parsePointer } from '../patch/pointer';
import { compileRegex, SafeRegex } from '../util/regex';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { Interner } from '../util/interner';
import { parseModRuleValue } from './value';
import {
  AdmissionOperation,
  MatchFor,
  MatchItem,
  MAX_EXECUTION_TIER,
  MIN_EXECUTION_TIER,
  ModRule,
  MODRULE_API_VERSION,
  MODRULE_KIND,
  PatchOperation,
  PatchOperationType,
} from './types';
import type { ValidationProblem } from './problems';
import { CompiledLabelSelector, compileLabelSelector } from './labelselector';

/** One compiled criteria item of spec.match. */
export interface CompiledMatchItem {
  readonly select: CompiledJsonPath;
  readonly matchValue?: string;
  readonly matchValues?: readonly string[];
  readonly matchRegex?: SafeRegex;
  readonly matchFor: MatchFor;
  readonly negate: boolean;
}

// Interned items carry a number so that lists of them (and rule bodies) are keyed by a short string.
let nextItemId = 0;
class MatchItemImpl implements CompiledMatchItem {
  readonly id = nextItemId++;
  constructor(
    readonly select: CompiledJsonPath,
    readonly matchValue: string | undefined,
    readonly matchValues: readonly string[] | undefined,
    readonly matchRegex: SafeRegex | undefined,
    readonly matchFor: MatchFor,
    readonly negate: boolean,
  ) {}
}

/** A path token: literal text, or text with `#N` placeholders (numbers) to fill from a select's captured indices. */
export type PathToken = string | ReadonlyArray<string | number>;

/** How an operation's value is produced: nothing (remove), a constant parsed once, or a template rendered per result. */
export type CompiledValue =
  | { readonly kind: 'none' }
  | { readonly kind: 'constant'; readonly value: JsonValue }
  | { readonly kind: 'template'; readonly template: CompiledTemplate };

/** One compiled operation of spec.patch. */
export interface CompiledPatchOperation {
  readonly op: PatchOperationType;
  readonly path: string;
  readonly tokens: readonly PathToken[];
  readonly hasPlaceholders: boolean;
  readonly select?: CompiledJsonPath;
  readonly value: CompiledValue;
}

/**
 * A ModRule compiled once per version: everything the engine needs without re-parsing rule text. `source` is the
 * object it was compiled from (not copied), for the CLI's explain/lint/validate; stores of the servers compile
 * without it (`keepSource: false`), so the operator does not hold every listed ModRule object through its rule.
 */
export interface CompiledRule {
  readonly namespace: string;
  readonly name: string;
  /** "namespace/name", the rule's identity in logs and messages. */
  readonly key: string;
  readonly type: 'Patch' | 'Reject';
  readonly tier: number;
  readonly operations: ReadonlySet<AdmissionOperation>;
  readonly source?: ModRule;
  readonly match: readonly CompiledMatchItem[];
  readonly patch: readonly CompiledPatchOperation[];
  readonly rejectMessage?: CompiledTemplate;
  /** Compiled targetNamespaceRegex; undefined when the field is absent or empty. */
  readonly targetNamespaceRegex?: SafeRegex;
  /** Compiled targetNamespaceSelector (labels of the object's Namespace); undefined when absent. */
  readonly targetNamespaceSelector?: CompiledLabelSelector;
}

/** Thrown by compileModRule for a rule that does not validate. */
export class InvalidModRuleError extends Error {
  constructor(readonly problems: ValidationProblem[]) {
    super(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
  }
}

const SPEC_FIELDS = new Set([
  'type',
  'admissionOperations',
  'executionTier',
  'match',
  'patch',
  'rejectMessage',
  'targetNamespaceRegex',
  'targetNamespaceSelector',
]);
const MATCH_FIELDS = new Set(['select', 'matchValue', 'matchValues', 'matchRegex', 'matchFor', 'negate']);
const PATCH_FIELDS = new Set(['op', 'select', 'path', 'value']);
const OPERATIONS: readonly AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];
const DEFAULT_OPERATIONS: ReadonlySet<AdmissionOperation> = new Set<AdmissionOperation>(['CREATE', 'UPDATE']);
const PATCH_OPS: readonly PatchOperationType[] = ['add', 'replace', 'remove'];
const PLACEHOLDER = /#(\d+)/g;
// KubeMod rewrites `.#0` in value templates to the select's first captured index.
const TEMPLATE_PLACEHOLDER = /\.#(\d+)/g;

/** Rewrites KubeMod's `.#N` shorthand inside `{{ }}` actions to `(index .SelectKeyParts N)`; other text stays. */
export function preprocessValueTemplate(source: string): string {
  // KubeMod rewrites the whole text, so `file.#0 {{ .Namespace }}` became `file(index .SelectKeyParts 0) ...`.
  return source.replace(/\{\{[^]*?(?:\}\}|$)/g, (action) =>
    action.replace(TEMPLATE_PLACEHOLDER, '(index .SelectKeyParts $1)'),
  );
}

/** Compiles a ModRule (namespace taken from metadata, '' when absent); throws InvalidModRuleError. */
export function compileModRule(rule: ModRule): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule(rule);
  if (!compiled) throw new InvalidModRuleError(problems);
  return compiled;
}

/** Compile options: `keepSource: false` leaves CompiledRule.source out (what a server holds per rule). */
export interface CompileOptions {
  readonly keepSource?: boolean;
}

/** Validates and compiles in one pass: every problem found, and the compiled rule when there are none. */
export function analyzeModRule(
  obj: unknown,
  options: CompileOptions = {},
): { rule?: CompiledRule; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const problem: Report = Object.assign(
    (field: string, message: string): void => {
      problems.push({ field, message });
    },
    { count: () => problems.length },
  );

  if (!isJsonObject(obj)) {
    problem('', 'a ModRule must be an object');
    return { problems };
  }
  if (obj.apiVersion !== MODRULE_API_VERSION) {
    problem('apiVersion', `must be ${MODRULE_API_VERSION}, got ${describe(obj.apiVersion)}`);
  }
  if (obj.kind !== MODRULE_KIND) problem('kind', `must be ${MODRULE_KIND}, got ${describe(obj.kind)}`);

  let namespace = '';
  let name = '';
  const metadata = obj.metadata;
  if (!isJsonObject(metadata)) {
    problem('metadata', 'required');
  } else {
    if (typeof metadata.name !== 'string' || metadata.name === '') problem('metadata.name', 'required');
    else name = metadata.name;
    if (metadata.namespace !== undefined && metadata.namespace !== null) {
      if (typeof metadata.namespace !== 'string') problem('metadata.namespace', 'must be a string');
      else namespace = metadata.namespace;
    }
  }

  const spec = obj.spec;
  if (!isJsonObject(spec)) {
    problem('spec', 'required');
    return { problems };
  }
  for (const key of Object.keys(spec)) {
    if (!SPEC_FIELDS.has(key)) problem(`spec.${key}`, unknownField(key, SPEC_FIELDS));
  }

  const type = spec.type;
  if (type !== 'Patch' && type !== 'Reject')
    problem('spec.type', `must be Patch or Reject, got ${describe(type)}`);

  let operations = DEFAULT_OPERATIONS;
  const ops = spec.admissionOperations;
  if (ops !== undefined && ops !== null) {
    if (!Array.isArray(ops)) {
      problem('spec.admissionOperations', 'must be a list of CREATE, UPDATE, DELETE');
    } else if (ops.length > 0) {
      const set = new Set<AdmissionOperation>();
      ops.forEach((o, i) => {
        if (typeof o === 'string' && (OPERATIONS as readonly string[]).includes(o))
          set.add(o as AdmissionOperation);
        else
          problem(
            `spec.admissionOperations[${i}]`,
            `must be one of CREATE, UPDATE, DELETE, got ${describe(o)}`,
          );
      });
      operations = set;
    }
  }

  let tier = 0;
  const rawTier = spec.executionTier;
  if (rawTier !== undefined && rawTier !== null) {
    if (typeof rawTier !== 'number' || !Number.isInteger(rawTier)) {
      problem('spec.executionTier', `must be an integer, got ${describe(rawTier)}`);
    } else if (rawTier < MIN_EXECUTION_TIER || rawTier > MAX_EXECUTION_TIER) {
      problem(
        'spec.executionTier',
        `must be between ${MIN_EXECUTION_TIER} and ${MAX_EXECUTION_TIER}, got ${rawTier}`,
      );
    } else {
      tier = rawTier;
    }
  }

  const match: CompiledMatchItem[] = [];
  const itemKeys: string[] = [];
  const rawMatch = spec.match;
  if (rawMatch === undefined || rawMatch === null) {
    problem('spec.match', 'required: at least one match item');
  } else if (!Array.isArray(rawMatch)) {
    problem('spec.match', 'must be a list of match items');
  } else if (rawMatch.length === 0) {
    problem('spec.match', 'must have at least one item');
  } else {
    rawMatch.forEach((item, i) => {
      const compiled = compileMatchItem(item, `spec.match[${i}]`, problem);
      if (compiled) {
        match.push(compiled.item);
        itemKeys.push(compiled.key);
      }
    });
  }

  const patch: CompiledPatchOperation[] = [];
  const rawPatch = spec.patch;
  const patchCount = Array.isArray(rawPatch) ? rawPatch.length : 0;
  if (rawPatch !== undefined && rawPatch !== null && !Array.isArray(rawPatch)) {
    problem('spec.patch', 'must be a list of patch operations');
  } else if (type === 'Patch' && patchCount === 0) {
    problem('spec.patch', 'required for ModRules of type Patch: at least one operation');
  } else if (type === 'Reject' && patchCount > 0) {
    problem('spec.patch', 'only allowed in ModRules of type Patch');
  } else if (Array.isArray(rawPatch)) {
    rawPatch.forEach((item, i) => {
      const compiled = compilePatchOperation(item, `spec.patch[${i}]`, problem);
      if (compiled) patch.push(compiled);
    });
  }

  let rejectMessage: CompiledTemplate | undefined;
  const rawMessage = spec.rejectMessage;
  if (rawMessage !== undefined && rawMessage !== null) {
    if (typeof rawMessage !== 'string') problem('spec.rejectMessage', 'must be a string');
    else if (type === 'Patch') problem('spec.rejectMessage', 'only allowed in ModRules of type Reject');
    else
      rejectMessage = tryTemplate(
        () => rejectMessages.get(rawMessage, () => compileTemplate(rawMessage, 'rejectMessage')),
        'spec.rejectMessage',
        problem,
      );
  }

  let targetNamespaceRegex: SafeRegex | undefined;
  const rawTarget = spec.targetNamespaceRegex;
  if (rawTarget !== undefined && rawTarget !== null) {
    if (typeof rawTarget !== 'string') problem('spec.targetNamespaceRegex', 'must be a string');
    else if (rawTarget !== '')
      targetNamespaceRegex = tryRegex(rawTarget, 'spec.targetNamespaceRegex', problem);
  }

  let targetNamespaceSelector: CompiledLabelSelector | undefined;
  if (spec.targetNamespaceSelector !== undefined && spec.targetNamespaceSelector !== null) {
    targetNamespaceSelector = compileLabelSelector(
      spec.targetNamespaceSelector,
      'spec.targetNamespaceSelector',
      problem,
    );
  }

  if (problems.length > 0) return { problems };
  // Rules generated from one template share everything but their identity and patch paths: one body object
  // per distinct shape (criteria list exact-size, as arrays built by push() carry spare capacity).
  const built = match;
  // A short key (one per distinct body is kept): the texts that may hold "|" come last, JSON-quoted.
  const bodyKey = [
    type,
    tier,
    operations === DEFAULT_OPERATIONS ? '' : [...operations].sort().join(','),
    itemKeys.join(','),
    rejectMessage ? identity(rejectMessage) : '',
    targetNamespaceRegex ? JSON.stringify(targetNamespaceRegex.source) : '',
    targetNamespaceSelector ? JSON.stringify(spec.targetNamespaceSelector) : '',
  ].join('|');
  const body = bodies.get(bodyKey, () => ({
    type: type as 'Patch' | 'Reject',
    tier,
    operations: sharedOperations(operations),
    match: built.slice(),
    rejectMessage,
    targetNamespaceRegex,
    targetNamespaceSelector,
  }));
  const held = patch.length === 0 ? NO_PATCH : patch.slice();
  return {
    problems,
    rule:
      options.keepSource === false
        ? new Rule(namespace, name, body, held)
        : new SourcedRule(namespace, name, body, held, obj as unknown as ModRule),
  };
}

/** What rules with the same spec apart from their patch paths share (immutable, interned). */
interface RuleBody {
  readonly type: 'Patch' | 'Reject';
  readonly tier: number;
  readonly operations: ReadonlySet<AdmissionOperation>;
  readonly match: readonly CompiledMatchItem[];
  readonly rejectMessage?: CompiledTemplate;
  readonly targetNamespaceRegex?: SafeRegex;
  readonly targetNamespaceSelector?: CompiledLabelSelector;
}

/**
 * A compiled rule as servers hold it: its identity, its patch operations and a pointer to the shared body. The
 * rest of CompiledRule reads through to the body (getters the engine's calls inline), and `key` is made on demand.
 */
class Rule implements CompiledRule {
  constructor(
    readonly namespace: string,
    readonly name: string,
    private readonly body: RuleBody,
    readonly patch: readonly CompiledPatchOperation[],
  ) {}

  get key(): string {
    return `${this.namespace}/${this.name}`;
  }
  get type(): 'Patch' | 'Reject' {
    return this.body.type;
  }
  get tier(): number {
    return this.body.tier;
  }
  get operations(): ReadonlySet<AdmissionOperation> {
    return this.body.operations;
  }
  get match(): readonly CompiledMatchItem[] {
    return this.body.match;
  }
  get rejectMessage(): CompiledTemplate | undefined {
    return this.body.rejectMessage;
  }
  get targetNamespaceRegex(): SafeRegex | undefined {
    return this.body.targetNamespaceRegex;
  }
  get targetNamespaceSelector(): CompiledLabelSelector | undefined {
    return this.body.targetNamespaceSelector;
  }
  get source(): ModRule | undefined {
    return undefined;
  }
}

/** A rule that keeps the object it was compiled from (the CLI's explain, lint and validate read it). */
class SourcedRule extends Rule {
  constructor(
    namespace: string,
    name: string,
    body: RuleBody,
    patch: readonly CompiledPatchOperation[],
    private readonly from: ModRule,
  ) {
    super(namespace, name, body, patch);
  }

  override get source(): ModRule {
    return this.from;
  }
}

const NO_PATCH: readonly CompiledPatchOperation[] = Object.freeze([]);

// Few distinct admissionOperations sets exist (subsets of three): one Set object each.
const operationSets = new Map<string, ReadonlySet<AdmissionOperation>>([
  ['CREATE,UPDATE', DEFAULT_OPERATIONS],
]);
function sharedOperations(ops: ReadonlySet<AdmissionOperation>): ReadonlySet<AdmissionOperation> {
  const key = [...ops].sort().join(',');
  const seen = operationSets.get(key);
  if (seen) return seen;
  operationSets.set(key, ops);
  return ops;
}

// Numbers for interned objects that appear in interning keys (held weakly: a gone object's number goes with it).
const ids = new WeakMap<object, number>();
let nextId = 0;
function identity(o: object): number {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextId++));
  return id;
}

type Report = ((field: string, message: string) => void) & { count(): number };

function compileMatchItem(
  item: unknown,
  at: string,
  problem: Report,
): { item: MatchItemImpl; key: string } | undefined {
  if (!isJsonObject(item)) {
    problem(at, 'must be an object with a select');
    return undefined;
  }
  const before = countOf(problem);
  for (const key of Object.keys(item)) {
    if (!MATCH_FIELDS.has(key)) problem(`${at}.${key}`, unknownField(key, MATCH_FIELDS));
  }
  const m = item as Partial<Record<keyof MatchItem, JsonValue>>;
  let select: CompiledJsonPath | undefined;
  if (typeof m.select !== 'string' || m.select.trim() === '')
    problem(`${at}.select`, 'required: a JSONPath expression');
  else select = tryJsonPath(m.select, `${at}.select`, problem);

  let matchValue: string | undefined;
  if (m.matchValue !== undefined && m.matchValue !== null) {
    if (typeof m.matchValue !== 'string')
      problem(`${at}.matchValue`, `must be a string, got ${describe(m.matchValue)}`);
    else matchValue = m.matchValue;
  }
  let matchValues: string[] | undefined;
  if (m.matchValues !== undefined && m.matchValues !== null) {
    if (!Array.isArray(m.matchValues)) {
      problem(`${at}.matchValues`, 'must be a list of strings');
    } else {
      m.matchValues.forEach((v, j) => {
        if (typeof v !== 'string') problem(`${at}.matchValues[${j}]`, `must be a string, got ${describe(v)}`);
      });
      // KubeMod ignores an empty matchValues list.
      if (m.matchValues.length > 0) matchValues = m.matchValues as string[];
    }
  }
  let matchRegex: SafeRegex | undefined;
  if (m.matchRegex !== undefined && m.matchRegex !== null) {
    if (typeof m.matchRegex !== 'string') problem(`${at}.matchRegex`, 'must be a string');
    else matchRegex = tryRegex(m.matchRegex, `${at}.matchRegex`, problem);
  }
  let matchFor: MatchFor = 'Any';
  if (m.matchFor !== undefined && m.matchFor !== null && m.matchFor !== '') {
    if (m.matchFor !== 'Any' && m.matchFor !== 'All') {
      problem(`${at}.matchFor`, `must be Any or All, got ${describe(m.matchFor)}`);
    } else {
      matchFor = m.matchFor;
    }
  }
  let negate = false;
  if (m.negate !== undefined && m.negate !== null) {
    if (typeof m.negate !== 'boolean')
      problem(`${at}.negate`, `must be true or false, got ${describe(m.negate)}`);
    else negate = m.negate;
  }
  if (countOf(problem) !== before || !select) return undefined;
  // Whole items are shared too: `$.kind == Deployment` in every rule is one item, matched once per object version.
  const key = JSON.stringify([select.source, matchValue, matchValues, matchRegex?.source, matchFor, negate]);
  const shared = items.get(
    key,
    () => new MatchItemImpl(select, matchValue, matchValues, matchRegex, matchFor, negate),
  );
  return { item: shared, key: String(shared.id) };
}

function compilePatchOperation(
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
      problem(`${at}.path`, (err as Error).message);
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
      problem(`${at}.value`, `must be a string holding YAML, got ${describe(rawValue)}`);
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
        problem(`${at}.value`, (err as Error).message);
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

// Compiled parts shared by source text across rules and rule versions (they are immutable).
const selects = new Interner<CompiledJsonPath>();
const regexes = new Interner<SafeRegex>();
const constants = new Interner<JsonObject | JsonValue[]>();
const items = new Interner<MatchItemImpl>();
const bodies = new Interner<RuleBody>();
const rejectMessages = new Interner<CompiledTemplate>();

function tryJsonPath(source: string, field: string, problem: Report): CompiledJsonPath | undefined {
  try {
    return selects.get(source, () => compileJsonPath(source));
  } catch (err) {
    if (err instanceof JsonPathSyntaxError) {
      problem(field, err.message.startsWith('column') ? err.message : `column ${err.column}: ${err.message}`);
    } else {
      problem(field, `invalid JSONPath: ${(err as Error).message}`);
    }
    return undefined;
  }
}

function tryTemplate<T>(compile: () => T, field: string, problem: Report): T | undefined {
  try {
    return compile();
  } catch (err) {
    if (err instanceof TemplateSyntaxError) problem(field, `invalid template: ${err.message}`);
    else problem(field, `invalid template: ${(err as Error).message}`);
    return undefined;
  }
}

function tryRegex(source: string, field: string, problem: Report): SafeRegex | undefined {
  try {
    return regexes.get(source, () => compileRegex(source));
  } catch (err) {
    problem(field, (err as Error).message);
    return undefined;
  }
}

// "Did this item add problems?" without threading the list through every helper.
function countOf(problem: Report): number {
  return problem.count();
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  return JSON.stringify(v) ?? String(v);
}

function unknownField(key: string, known: ReadonlySet<string>): string {
  const near = [...known].find((k) => editDistance(k.toLowerCase(), key.toLowerCase()) <= 2);
  return `unknown field${near ? ` (did you mean "${near}"?)` : ''}, expected one of: ${[...known].join(', ')}`;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}
