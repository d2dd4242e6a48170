import { BUDGET_CHECK_STEPS, BudgetExhaustedError, RequestBudget } from '../util/budget';
import { compileRegex, RegexSyntaxError, SafeRegex } from '../util/regex';
import { ArgNode, BranchNode, CommandNode, Node, PipeNode, Pos, TemplateTree } from './ast';
import { FunctionError, TemplateRuntimeError } from './errors';
import { FUNCTIONS } from './functions';
import { FuncContext, KIND_GO_TYPE, ParamKind } from './registry';
import { Budget, formatValue, GoValue, goTypeName, isMap, isTrue, mapGet, sortedKeys } from './values';

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

const NO_FINAL = Symbol('no final');
type Final = GoValue | typeof NO_FINAL;
const BREAK = 1;
const CONTINUE = 2;
const MAX_REGEX_CACHE = 16;

// Thrown inside an action; the enclosing command adds where it happened.
class ExecFail extends Error {}

const NILABLE: ReadonlySet<ParamKind> = new Set(['any', 'list', 'dict']);

// Go's evalArg names constants' expected kinds this way ("expected integer; found 1.5").
const expectedName = (kind: ParamKind): string =>
  kind === 'int' ? 'integer' : kind === 'float' ? 'float' : KIND_GO_TYPE[kind];

/**
 * Executes a parsed template against data, as Go's text/template Execute does. The request budget, when given, is
 * charged for the steps taken (BudgetExhaustedError when it runs out).
 */
export function execute(
  tree: TemplateTree,
  data: GoValue,
  limits: RenderLimits = DEFAULT_LIMITS,
  budget?: RequestBudget,
  name: TemplateName = tree.name,
): string {
  try {
    return new State(tree, data, limits, budget ?? null, name).run();
  } catch (e) {
    if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
    // Anything else (e.g. a stack overflow from deep nesting) is still this template's failure, not the process's.
    throw new TemplateRuntimeError(`template: ${nameText(name)}: ${(e as Error)?.message ?? String(e)}`);
  }
}

/** A template's name in messages, or a function giving it (computed only when a message needs it). */
export type TemplateName = string | (() => string);

function nameText(name: TemplateName): string {
  return typeof name === 'string' ? name : name();
}

class State implements FuncContext {
  private readonly out: string[] = [];
  private outLen = 0;
  private steps = 0;
  // The step counter doubles as the request budget's meter: charge() compares once, checkpoint() does the rest.
  private checkAt: number;
  private charged = 0;
  private depth = 0;
  private vars: Array<{ name: string; value: GoValue }>;
  private cmd: CommandNode | null = null;
  readonly maxString: number;

  constructor(
    private readonly tree: TemplateTree,
    data: GoValue,
    private readonly limits: RenderLimits,
    private readonly budget: RequestBudget | null,
    // The template's name in messages (shared trees are parsed under the first rule's name).
    private readonly templateName: TemplateName,
  ) {
    this.vars = [{ name: '$', value: data }];
    this.maxString = limits.maxOutput;
    this.checkAt = budget ? Math.min(limits.maxSteps, BUDGET_CHECK_STEPS) : limits.maxSteps;
  }

  private get name(): string {
    return nameText(this.templateName);
  }

  run(): string {
    this.walk(this.vars[0].value, this.tree.root);
    this.settle();
    return this.out.length === 1 ? this.out[0] : this.out.join('');
  }

  charge(n: number): void {
    this.steps += n;
    if (this.steps > this.checkAt) this.checkpoint();
  }

  private settle(): void {
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

  private write(s: string): void {
    this.outLen += s.length;
    if (this.outLen > this.limits.maxOutput) {
      throw new TemplateRuntimeError(`template: ${this.name}: output exceeds ${this.limits.maxOutput} bytes`);
    }
    this.out.push(s);
  }

  private fail(pos: Pos, text: string, msg: string): never {
    throw new TemplateRuntimeError(
      `template: ${this.name}:${pos.line}:${pos.col}: executing "${this.name}" at <${text}>: ${msg}`,
    );
  }

  // Walks a list of nodes; returns BREAK/CONTINUE when a loop control was hit.
  private walk(dot: GoValue, nodes: readonly Node[]): number {
    for (const node of nodes) {
      this.charge(1);
      switch (node.type) {
        case 'text':
          this.write(node.text);
          break;
        case 'action': {
          const v = this.evalPipeline(dot, node.pipe);
          if (node.pipe.decl.length === 0) {
            const remaining = this.limits.maxOutput - this.outLen;
            let text: string;
            try {
              text = formatValue(v, new Budget(Math.max(remaining, 0)));
            } catch (e) {
              this.fail(node.pos, node.text, (e as Error).message);
            }
            this.write(text);
          }
          break;
        }
        case 'if':
        case 'with': {
          const r = this.walkIfOrWith(dot, node);
          if (r) return r;
          break;
        }
        case 'range': {
          const r = this.walkRange(dot, node);
          if (r) return r;
          break;
        }
        case 'template':
          this.walkTemplate(dot, node);
          break;
        case 'break':
          return BREAK;
        case 'continue':
          return CONTINUE;
      }
    }
    return 0;
  }

  private walkIfOrWith(dot: GoValue, node: BranchNode): number {
    const mark = this.vars.length;
    try {
      const v = this.evalPipeline(dot, node.pipe);
      if (isTrue(v)) return this.walk(node.type === 'with' ? v : dot, node.list);
      if (node.elseList) return this.walk(dot, node.elseList);
      return 0;
    } finally {
      this.vars.length = mark;
    }
  }

  private walkRange(dot: GoValue, node: BranchNode): number {
    const mark = this.vars.length;
    try {
      const v = this.evalPipeline(dot, node.pipe);
      const decl = node.pipe.decl;
      const iterMark = this.vars.length;
      const one = (key: GoValue, elem: GoValue): number => {
        this.charge(1);
        if (decl.length > 0) {
          if (node.pipe.isAssign) {
            if (decl.length > 1) {
              this.setVar(decl[0], key);
              this.setVar(decl[1], elem);
            } else this.setVar(decl[0], elem);
          } else {
            // Declared variables sit at the top of the stack: last is the element, first the key.
            this.vars[this.vars.length - 1].value = decl.length > 1 ? elem : elem;
            if (decl.length > 1) this.vars[this.vars.length - 2].value = key;
          }
        }
        const r = this.walk(elem, node.list);
        this.vars.length = iterMark;
        return r;
      };
      let count = 0;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++, count++) if (one(BigInt(i), v[i]) === BREAK) break;
      } else if (isMap(v)) {
        for (const k of sortedKeys(v)) {
          count++;
          if (one(k, v[k]) === BREAK) break;
        }
      } else if (typeof v === 'bigint') {
        for (let i = 0n; i < v; i++, count++) if (one(i, i) === BREAK) break;
      } else if (v !== undefined && v !== null) {
        this.fail(node.pos, node.text, `range can't iterate over ${formatValue(v)}`);
      }
      if (count === 0 && node.elseList) return this.walk(dot, node.elseList);
      return 0;
    } finally {
      this.vars.length = mark;
    }
  }

  private walkTemplate(dot: GoValue, node: Extract<Node, { type: 'template' }>): void {
    const body = this.tree.defines.get(node.name);
    if (!body) this.fail(node.pos, node.text, `no such template ${JSON.stringify(node.name)}`);
    if (this.depth >= this.limits.maxDepth) {
      this.fail(node.pos, node.text, `exceeded maximum template depth (${this.limits.maxDepth})`);
    }
    const newDot = node.pipe ? this.evalPipeline(dot, node.pipe) : null;
    const saved = this.vars;
    this.vars = [{ name: '$', value: newDot }];
    this.depth++;
    try {
      this.walk(newDot, body);
    } finally {
      this.depth--;
      this.vars = saved;
    }
  }

  private setVar(name: string, value: GoValue): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i].name === name) {
        this.vars[i].value = value;
        return;
      }
    }
    throw new ExecFail(`undefined variable: ${name}`);
  }

  private varValue(name: string): GoValue {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i].name === name) return this.vars[i].value;
    throw new ExecFail(`undefined variable: ${name}`);
  }

  private evalPipeline(dot: GoValue, pipe: PipeNode): GoValue {
    let value: Final = NO_FINAL;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(dot, cmd, value);
      // Go unwraps interface{} results: a nil interface becomes the invalid "no value".
      if (value === null) value = undefined;
    }
    const v = value === NO_FINAL ? undefined : value;
    for (const name of pipe.decl) {
      if (pipe.isAssign) this.setVar(name, v);
      else this.vars.push({ name, value: v });
    }
    return v;
  }

  private evalCommand(dot: GoValue, cmd: CommandNode, final: Final): GoValue {
    this.charge(1);
    const saved = this.cmd;
    this.cmd = cmd;
    try {
      return this.evalCommandInner(dot, cmd, final);
    } catch (e) {
      if (e instanceof ExecFail) this.fail(cmd.pos, cmd.text, e.message);
      if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
      // Functions that throw (Go: panic) become errors of this action, never a crash.
      this.fail(cmd.pos, cmd.text, String((e as Error)?.message ?? e));
    } finally {
      this.cmd = saved;
    }
  }

  private evalCommandInner(dot: GoValue, cmd: CommandNode, final: Final): GoValue {
    const first = cmd.args[0];
    switch (first.type) {
      case 'field':
        return this.evalFieldChain(dot, first.ident, cmd.args, final);
      case 'chain': {
        const recv = this.evalArg(dot, 'any', first.node, true);
        return this.evalFieldChain(recv, first.field, cmd.args, final);
      }
      case 'identifier':
        return this.evalFunction(dot, first.name, cmd.args.slice(1), final);
      case 'pipe':
        this.notAFunction(cmd.args, final, cmd.text);
        return this.evalPipeline(dot, first);
      case 'variable': {
        const v = this.varValue(first.ident[0]);
        if (first.ident.length === 1) {
          this.notAFunction(cmd.args, final, first.ident[0]);
          return v;
        }
        return this.evalFieldChain(v, first.ident.slice(1), cmd.args, final);
      }
    }
    this.notAFunction(cmd.args, final, cmd.text);
    switch (first.type) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        throw new ExecFail('nil is not a command');
      case 'number':
        return this.idealConstant(first);
      case 'string':
        return first.value;
    }
  }

  private notAFunction(args: readonly ArgNode[], final: Final, name: string): void {
    if (args.length > 1 || final !== NO_FINAL)
      throw new ExecFail(`can't give argument to non-function ${name}`);
  }

  private idealConstant(n: Extract<ArgNode, { type: 'number' }>): GoValue {
    if (n.floatTyped && n.isFloat) return n.float;
    if (n.isInt) return n.int;
    throw new ExecFail(`${n.text} overflows int`);
  }

  // Field chains on maps: a missing key is Go's "no value"; stepping through nil is an error.
  private evalFieldChain(
    receiver: GoValue,
    ident: readonly string[],
    args: readonly ArgNode[],
    final: Final,
  ): GoValue {
    let cur = receiver;
    const hasArgs = args.length > 1 || final !== NO_FINAL;
    for (let i = 0; i < ident.length; i++) {
      const name = ident[i];
      if (cur === undefined) return undefined;
      if (cur === null) throw new ExecFail(`nil pointer evaluating interface {}.${name}`);
      if (!isMap(cur)) throw new ExecFail(`can't evaluate field ${name} in type ${goTypeName(cur)}`);
      if (i === ident.length - 1 && hasArgs) throw new ExecFail(`${name} is not a method but has arguments`);
      cur = mapGet(cur, name);
    }
    return cur;
  }

  private evalFunction(dot: GoValue, name: string, args: readonly ArgNode[], final: Final): GoValue {
    const fn = FUNCTIONS.get(name);
    if (!fn) throw new ExecFail(`function ${JSON.stringify(name)} not defined`);
    const numIn = args.length + (final === NO_FINAL ? 0 : 1);
    const numFixed = fn.params.length;
    if (fn.variadic ? numIn < numFixed : numIn !== numFixed) {
      throw new ExecFail(
        `wrong number of args for ${name}: want ${fn.variadic ? 'at least ' : ''}${numFixed} got ${numIn}`,
      );
    }
    // and/or short-circuit: stop at the first argument that decides the result.
    if (name === 'and' || name === 'or') {
      let v: GoValue = undefined;
      for (const a of args) {
        v = this.evalArg(dot, 'any', a, true);
        if (isTrue(v) === (name === 'or')) return v;
      }
      return final === NO_FINAL ? v : final;
    }
    const argv: GoValue[] = [];
    let i = 0;
    for (; i < numFixed && i < args.length; i++) argv.push(this.evalArg(dot, fn.params[i], args[i], false));
    for (; i < args.length; i++) argv.push(this.evalArg(dot, fn.variadic as ParamKind, args[i], false));
    if (final !== NO_FINAL) {
      const kind = numIn - 1 < numFixed ? fn.params[numIn - 1] : (fn.variadic as ParamKind);
      argv.push(this.validate(final, kind));
    }
    // String work (regexes, hashing, parsing, concatenation) costs one step per 64 characters read or
    // written; charging inputs first stops a call over many large strings before it allocates.
    let chars = 0;
    for (const a of argv) if (typeof a === 'string') chars += a.length;
    if (chars >= 64) this.charge(chars >> 6);
    let result: GoValue;
    try {
      result = fn.fn(this, ...argv);
    } catch (e) {
      if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
      throw new ExecFail(`error calling ${name}: ${(e as Error)?.message ?? String(e)}`);
    }
    if (typeof result === 'string' && result.length > this.maxString) {
      throw new ExecFail(`error calling ${name}: result longer than ${this.maxString} bytes`);
    }
    if (typeof result === 'string' && result.length >= 64) this.charge(result.length >> 6);
    return result;
  }

  // Evaluates an argument for a parameter of the given Go type, following Go's evalArg rules for constants.
  private evalArg(dot: GoValue, kind: ParamKind, n: ArgNode, keepInvalid: boolean): GoValue {
    let v: GoValue;
    switch (n.type) {
      case 'dot':
        v = dot;
        break;
      case 'nil':
        if (NILABLE.has(kind)) return null;
        throw new ExecFail(`cannot assign nil to ${KIND_GO_TYPE[kind]}`);
      case 'field':
        v = this.evalFieldChain(dot, n.ident, [n], NO_FINAL);
        break;
      case 'variable': {
        const base = this.varValue(n.ident[0]);
        v = n.ident.length > 1 ? this.evalFieldChain(base, n.ident.slice(1), [n], NO_FINAL) : base;
        break;
      }
      case 'pipe':
        v = this.evalPipeline(dot, n);
        break;
      case 'identifier':
        v = this.evalFunction(dot, n.name, [], NO_FINAL);
        break;
      case 'chain': {
        if (n.node.type === 'nil') throw new ExecFail('indirection through explicit nil');
        const recv = this.evalArg(dot, 'any', n.node, true);
        v = this.evalFieldChain(recv, n.field, [n], NO_FINAL);
        break;
      }
      case 'bool':
        if (kind === 'bool' || kind === 'any') return n.value;
        throw new ExecFail(`expected ${expectedName(kind)}; found ${n.value}`);
      case 'string':
        if (kind === 'string' || kind === 'any') return n.value;
        throw new ExecFail(`expected ${expectedName(kind)}; found ${n.text}`);
      case 'number':
        if (kind === 'any') return this.idealConstant(n);
        if (kind === 'int' && n.isInt) return n.int;
        if (kind === 'float' && n.isFloat) return n.float;
        throw new ExecFail(`expected ${expectedName(kind)}; found ${n.text}`);
    }
    if (keepInvalid) return v;
    return this.validate(v, kind);
  }

  // Go's validateType: a missing value becomes nil where nil is allowed; otherwise types must match exactly.
  private validate(v: GoValue, kind: ParamKind): GoValue {
    if (v === undefined) {
      if (NILABLE.has(kind)) return null;
      throw new ExecFail(`invalid value; expected ${KIND_GO_TYPE[kind]}`);
    }
    let ok: boolean;
    switch (kind) {
      case 'any':
        return v;
      case 'string':
        ok = typeof v === 'string';
        break;
      case 'int':
        ok = typeof v === 'bigint';
        break;
      case 'float':
        ok = typeof v === 'number';
        break;
      case 'bool':
        ok = typeof v === 'boolean';
        break;
      case 'list':
        ok = Array.isArray(v);
        break;
      case 'dict':
        ok = isMap(v);
        break;
    }
    if (!ok) {
      throw new ExecFail(
        `wrong type for value; expected ${KIND_GO_TYPE[kind]}; got ${v === null ? 'interface {}' : goTypeName(v)}`,
      );
    }
    return v;
  }
}
