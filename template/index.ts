import { RequestBudget } from '../util/budget';
import { TemplateRuntimeError, TemplateSyntaxError } from './errors';
import { FUNCTIONS, TEMPLATE_FUNCTIONS } from './functions';
import { Interner } from '../util/interner';
import { TemplateTree } from './ast';
import { parse } from './parser';
import { DEFAULT_LIMITS, execute, RenderLimits, TemplateName } from './render';
import { GoValue, newMap } from './values';

/** A parsed template, ready to render many times. */
export interface CompiledTemplate {
  readonly source: string;
  /**
   * Renders with the given data (e.g. { Target, Namespace, SelectedItem, SelectKeyParts }); throws
   * TemplateRuntimeError, or BudgetExhaustedError when the request's budget (if given) runs out.
   */
  render(data: Record<string, unknown>, budget?: RequestBudget): string;
}

const MUTATING = new Set(['set', 'unset', 'merge', 'mergeOverwrite']);

function copyData(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copyData);
  if (typeof v === 'object' && v !== null) {
    const m = newMap();
    for (const k of Object.keys(v)) m[k] = copyData((v as Record<string, unknown>)[k]) as GoValue;
    return m;
  }
  return v;
}

const hasFunction = (name: string): boolean => FUNCTIONS.has(name);

// Rules generated from one template share its parse tree; only the name (used in error messages) differs.
// The interned value is the SharedTemplate, which every rule's template holds, so the entry lives while any does.
const templates = new Interner<SharedTemplate>();

/**
 * A parsed template shared by everything with the same source text (default limits). The name used in messages
 * is given per render, so one object serves every rule whose value has this text.
 */
export class SharedTemplate {
  constructor(
    readonly tree: TemplateTree,
    /** The first copy of the source text, so rules with equal text hold one string. */
    readonly source: string,
    /** Calls set/unset/merge/mergeOverwrite, which change their map argument. */
    readonly mutates: boolean,
  ) {}

  /** Renders as CompiledTemplate.render does, naming the template `name` in messages. */
  renderAs(
    name: TemplateName,
    data: Record<string, unknown>,
    budget?: RequestBudget,
    limits = DEFAULT_LIMITS,
  ): string {
    // Sprig's set/unset/merge mutate maps in place; such templates get a private copy so the admitted object
    // (and the caller's data) never changes underneath the engine.
    const { tree, mutates } = this;
    return execute(tree, (mutates ? copyData(data) : data) as GoValue, limits, budget, name);
  }
}
// Read-only after parsing (render only reads them).
const NO_DEFINES: TemplateTree['defines'] = new Map();
const NO_FUNCTIONS: TemplateTree['functions'] = new Set();

/**
 * Copies every list of a parsed tree to its exact size, in place (objects keep their identity). The parser builds
 * lists with push(), which leaves spare slots (17 for a one-element list, 152 bytes); a tree lives as long as its
 * rules. Only plain objects and arrays are walked: Maps, Sets and cached compiled values stay as they are.
 */
function compactLists<T>(v: T): T {
  if (Array.isArray(v)) return v.map(compactLists) as T;
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = compactLists(o[k]);
  }
  return v;
}

// Actions that call no function (`{{ .Target.metadata.name }}`), with the same text at the same place, are one
// node across templates: generated rules that differ only in the text around them share the action's subtree.
// Same text at the same position parses to the same subtree; render only reads such nodes (no call-site cache).
const actions = new Interner<TemplateTree['root'][number]>();

function shareActions(root: TemplateTree['root']): void {
  for (let i = 0; i < root.length; i++) {
    const node = root[i];
    if (node.type !== 'action' || !callFree(node)) continue;
    root[i] = actions.get(`${node.pos.line}:${node.pos.col}:${node.text}`, () => node);
  }
}

function callFree(v: unknown): boolean {
  if (Array.isArray(v)) return v.every(callFree);
  if (v === null || typeof v !== 'object') return true;
  const o = v as Record<string, unknown>;
  if (o.type === 'identifier' || 'cache' in o) return false;
  return Object.keys(o).every((k) => callFree(o[k]));
}

function parseShared(source: string, name: string): SharedTemplate {
  return templates.get(source, () => {
    const parsed = parse(source, name, hasFunction);
    // Most values define no templates and call no functions: one shared empty Map/Set instead of two per rule.
    if (parsed.defines.size === 0) parsed.defines = NO_DEFINES;
    if (parsed.functions.size === 0) parsed.functions = NO_FUNCTIONS;
    compactLists(parsed);
    shareActions(parsed.root);
    return new SharedTemplate(
      parsed,
      source,
      [...parsed.functions].some((f) => MUTATING.has(f)),
    );
  });
}

/**
 * A template that needs evaluating. One small object per rule: the tree (and its source text) are shared by
 * every rule with the same text, the name (for messages) is the rule's own.
 */
class TreeTemplate implements CompiledTemplate {
  constructor(
    private readonly shared: SharedTemplate,
    private readonly name: string,
    private readonly limits: RenderLimits,
  ) {}

  get source(): string {
    return this.shared.source;
  }

  render(data: Record<string, unknown>, budget?: RequestBudget): string {
    return this.shared.renderAs(this.name, data, budget, this.limits);
  }
}

/**
 * Parses template source once per distinct text and returns the shared template (render with a name per call);
 * throws TemplateSyntaxError naming `name`.
 */
export function compileSharedTemplate(source: string, name = 'template'): SharedTemplate {
  return parseShared(source, name);
}

/** Parses Go text/template source with Sprig functions; throws TemplateSyntaxError. */
export function compileTemplate(
  source: string,
  name = 'template',
  limits: RenderLimits = DEFAULT_LIMITS,
): CompiledTemplate {
  const shared = parseShared(source, name);
  const tree = shared.tree;
  // Plain text needs no evaluation: the common ModRule value is a literal.
  if (tree.root.length === 0) return { source, render: () => '' };
  if (tree.root.length === 1 && tree.root[0].type === 'text') {
    const text = tree.root[0].text;
    return { source, render: () => text };
  }
  return new TreeTemplate(shared, name, limits);
}

export { TemplateRuntimeError, TemplateSyntaxError, TEMPLATE_FUNCTIONS, DEFAULT_LIMITS };
export type { RenderLimits, TemplateName };
