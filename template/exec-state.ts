import { BUDGET_CHECK_STEPS, RequestBudget } from '../util/budget';
import { compileRegex, RegexSyntaxError, SafeRegex } from '../util/regex';
import { CommandNode, Pos, TemplateTree } from './ast';
import { FunctionError, TemplateRuntimeError } from './errors';
import { FuncContext } from './registry';
import { GoValue } from './values';
import { ExecFail } from './exec-args';

/** Work limits for one render; a tenant's template must not starve others. */
export interface RenderLimits {
  /** Largest output (and largest string any function may build), in characters. */
  maxOutput: number;
  /** Evaluation steps: nodes, commands, range iterations and elements copied by functions. */
  maxSteps: number;
  /** Nested {{template}} calls. */
  maxDepth: number;
}

/** Defaults: 1 MiB of output, a million steps, 100 nested template calls. */
export const DEFAULT_LIMITS: RenderLimits = { maxOutput: 1024 * 1024, maxSteps: 1_000_000, maxDepth: 100 };

/** A template's name in messages, or a function giving it (computed only when a message needs it). */
export type TemplateName = string | (() => string);

/** The text of a template name. */
export function nameText(name: TemplateName): string {
  return typeof name === 'string' ? name : name();
}

const MAX_REGEX_CACHE = 16;

/**
 * The state of one render: the tree, the variables in scope, what it may spend and has spent (steps, charged to the
 * request budget every BUDGET_CHECK_STEPS; output size), the regexes its functions compile, and the messages that
 * say where it failed. One plain class: a render makes one per call, and V8 builds a class hierarchy's objects
 * several times slower (measured: +40 ns per render of `{{ .Namespace }}`).
 */
export class ExecState implements FuncContext {
  private readonly out: string[] = [];
  private outLen = 0;
  private steps = 0;
  // The step counter doubles as the request budget's meter: charge() compares once, checkpoint() does the rest.
  private checkAt: number;
  private charged = 0;
  /** The command being evaluated (for messages and its regex cache). */
  cmd: CommandNode | null = null;
  /** Nested {{template}} calls. */
  depth = 0;
  /** Variables in scope, innermost last. */
  vars: Array<{ name: string; value: GoValue }>;
  readonly maxString: number;

  constructor(
    readonly tree: TemplateTree,
    data: GoValue,
    readonly limits: RenderLimits,
    private readonly budget: RequestBudget | null,
    // The template's name in messages (shared trees are parsed under the first rule's name).
    private readonly templateName: TemplateName,
  ) {
    this.vars = [{ name: '$', value: data }];
    this.maxString = limits.maxOutput;
    this.checkAt = budget ? Math.min(limits.maxSteps, BUDGET_CHECK_STEPS) : limits.maxSteps;
  }

  get name(): string {
    return nameText(this.templateName);
  }

  /** The output so far, as one string. */
  output(): string {
    return this.out.length === 1 ? this.out[0] : this.out.join('');
  }

  /** The output room left, in characters. */
  get remaining(): number {
    return this.limits.maxOutput - this.outLen;
  }

  /** Adds n steps; past the limit (or at a budget checkpoint) checkpoint() decides. */
  charge(n: number): void {
    this.steps += n;
    if (this.steps > this.checkAt) this.checkpoint();
  }

  /** Charges the steps not yet charged to the request budget (one at least). */
  settle(): void {
    if (!this.budget) return;
    const n = Math.max(this.steps - this.charged, 1);
    this.charged = this.steps;
    this.budget.charge(n);
  }

  private checkpoint(): void {
    this.settle();
    this.checkAt = Math.min(this.limits.maxSteps, this.steps + BUDGET_CHECK_STEPS);
    if (this.steps > this.limits.maxSteps) {
      const at = this.cmd ? ` at <${this.cmd.text}>` : '';
      throw new TemplateRuntimeError(
        `template: ${this.name}: evaluation exceeded ${this.limits.maxSteps} steps${at}`,
      );
    }
  }

  /** An RE2 regex, cached on the command that uses it. */
  regex(pattern: string): SafeRegex {
    const node = this.cmd;
    const cache = node ? (node.cache ??= new Map<string, unknown>()) : undefined;
    const hit = cache?.get(pattern) as SafeRegex | undefined;
    if (hit) return hit;
    let re: SafeRegex;
    try {
      re = compileRegex(pattern);
    } catch (e) {
      if (e instanceof RegexSyntaxError) throw new FunctionError(`error parsing regexp: ${e.message}`);
      throw e;
    }
    if (cache && cache.size < MAX_REGEX_CACHE) cache.set(pattern, re);
    return re;
  }

  /** Appends output; past the output limit, a runtime error. */
  write(s: string): void {
    this.outLen += s.length;
    if (this.outLen > this.limits.maxOutput) {
      throw new TemplateRuntimeError(`template: ${this.name}: output exceeds ${this.limits.maxOutput} bytes`);
    }
    this.out.push(s);
  }

  /** Fails the render at a node, as Go's exec reports it. */
  fail(pos: Pos, text: string, msg: string): never {
    throw new TemplateRuntimeError(
      `template: ${this.name}:${pos.line}:${pos.col}: executing "${this.name}" at <${text}>: ${msg}`,
    );
  }

  /** Assigns an existing variable (Go's `$x = v`). */
  setVar(name: string, value: GoValue): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i].name === name) {
        this.vars[i].value = value;
        return;
      }
    }
    throw new ExecFail(`undefined variable: ${name}`);
  }

  /** The value of the innermost variable of that name. */
  varValue(name: string): GoValue {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i].name === name) return this.vars[i].value;
    throw new ExecFail(`undefined variable: ${name}`);
  }
}
