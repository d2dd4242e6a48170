import { BudgetExhaustedError } from '../util/budget';
import { ArgNode, CommandNode, PipeNode } from './ast';
import { TemplateRuntimeError } from './errors';
import { FUNCTIONS } from './functions';
import { KIND_GO_TYPE, ParamKind } from './registry';
import { GoValue, isTrue } from './values';
import { ExecState } from './exec-state';
import {
  evalFieldChain,
  ExecFail,
  expectedName,
  Final,
  idealConstant,
  NILABLE,
  NO_FINAL,
  notAFunction,
  validateArg,
} from './exec-args';
import { messageOf } from '../util/errors';

/* Pipelines, commands, function calls and arguments, evaluated against one render's state as Go's exec does. */

/** Evaluates a pipeline (declaring or assigning its variables); its value. */
export function evalPipeline(s: ExecState, dot: GoValue, pipe: PipeNode): GoValue {
  let value: Final = NO_FINAL;
  for (const cmd of pipe.cmds) {
    value = evalCommand(s, dot, cmd, value);
    // Go unwraps interface{} results: a nil interface becomes the invalid "no value".
    if (value === null) value = undefined;
  }
  const v = value === NO_FINAL ? undefined : value;
  for (const name of pipe.decl) {
    if (pipe.isAssign) s.setVar(name, v);
    else s.vars.push({ name, value: v });
  }
  return v;
}

function evalCommand(s: ExecState, dot: GoValue, cmd: CommandNode, final: Final): GoValue {
  s.charge(1);
  const saved = s.cmd;
  s.cmd = cmd;
  try {
    return evalCommandInner(s, dot, cmd, final);
  } catch (e) {
    if (e instanceof ExecFail) s.fail(cmd.pos, cmd.text, e.message);
    if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
    // Functions that throw (Go: panic) become errors of this action, never a crash.
    s.fail(cmd.pos, cmd.text, messageOf(e));
  } finally {
    s.cmd = saved;
  }
}

function evalCommandInner(s: ExecState, dot: GoValue, cmd: CommandNode, final: Final): GoValue {
  const first = cmd.args[0];
  switch (first.type) {
    case 'field':
      return evalFieldChain(dot, first.ident, cmd.args, final);
    case 'chain': {
      const recv = evalArg(s, dot, 'any', first.node, true);
      return evalFieldChain(recv, first.field, cmd.args, final);
    }
    case 'identifier':
      return evalFunction(s, dot, first.name, cmd.args.slice(1), final);
    case 'pipe':
      notAFunction(cmd.args, final, cmd.text);
      return evalPipeline(s, dot, first);
    case 'variable': {
      const v = s.varValue(first.ident[0]);
      if (first.ident.length === 1) {
        notAFunction(cmd.args, final, first.ident[0]);
        return v;
      }
      return evalFieldChain(v, first.ident.slice(1), cmd.args, final);
    }
  }
  notAFunction(cmd.args, final, cmd.text);
  switch (first.type) {
    case 'bool':
      return first.value;
    case 'dot':
      return dot;
    case 'nil':
      throw new ExecFail('nil is not a command');
    case 'number':
      return idealConstant(first);
    case 'string':
      return first.value;
  }
}

function evalFunction(
  s: ExecState,
  dot: GoValue,
  name: string,
  args: readonly ArgNode[],
  final: Final,
): GoValue {
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
      v = evalArg(s, dot, 'any', a, true);
      if (isTrue(v) === (name === 'or')) return v;
    }
    return final === NO_FINAL ? v : final;
  }
  const argv: GoValue[] = [];
  let i = 0;
  for (; i < numFixed && i < args.length; i++) argv.push(evalArg(s, dot, fn.params[i], args[i], false));
  for (; i < args.length; i++) argv.push(evalArg(s, dot, fn.variadic as ParamKind, args[i], false));
  if (final !== NO_FINAL) {
    const kind = numIn - 1 < numFixed ? fn.params[numIn - 1] : (fn.variadic as ParamKind);
    argv.push(validateArg(final, kind));
  }
  // String work (regexes, hashing, parsing, concatenation) costs one step per 64 characters read or
  // written; charging inputs first stops a call over many large strings before it allocates.
  let chars = 0;
  for (const a of argv) if (typeof a === 'string') chars += a.length;
  if (chars >= 64) s.charge(chars >> 6);
  let result: GoValue;
  try {
    result = fn.fn(s, ...argv);
  } catch (e) {
    if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
    throw new ExecFail(`error calling ${name}: ${messageOf(e)}`);
  }
  if (typeof result === 'string' && result.length > s.maxString) {
    throw new ExecFail(`error calling ${name}: result longer than ${s.maxString} bytes`);
  }
  if (typeof result === 'string' && result.length >= 64) s.charge(result.length >> 6);
  return result;
}

// Evaluates an argument for a parameter of the given Go type, following Go's evalArg rules for constants.
function evalArg(s: ExecState, dot: GoValue, kind: ParamKind, n: ArgNode, keepInvalid: boolean): GoValue {
  let v: GoValue;
  switch (n.type) {
    case 'dot':
      v = dot;
      break;
    case 'nil':
      if (NILABLE.has(kind)) return null;
      throw new ExecFail(`cannot assign nil to ${KIND_GO_TYPE[kind]}`);
    case 'field':
      v = evalFieldChain(dot, n.ident, [n], NO_FINAL);
      break;
    case 'variable': {
      const base = s.varValue(n.ident[0]);
      v = n.ident.length > 1 ? evalFieldChain(base, n.ident.slice(1), [n], NO_FINAL) : base;
      break;
    }
    case 'pipe':
      v = evalPipeline(s, dot, n);
      break;
    case 'identifier':
      v = evalFunction(s, dot, n.name, [], NO_FINAL);
      break;
    case 'chain': {
      if (n.node.type === 'nil') throw new ExecFail('indirection through explicit nil');
      const recv = evalArg(s, dot, 'any', n.node, true);
      v = evalFieldChain(recv, n.field, [n], NO_FINAL);
      break;
    }
    case 'bool':
      if (kind === 'bool' || kind === 'any') return n.value;
      throw new ExecFail(`expected ${expectedName(kind)}; found ${n.value}`);
    case 'string':
      if (kind === 'string' || kind === 'any') return n.value;
      throw new ExecFail(`expected ${expectedName(kind)}; found ${n.text}`);
    case 'number':
      if (kind === 'any') return idealConstant(n);
      if (kind === 'int' && n.isInt) return n.int;
      if (kind === 'float' && n.isFloat) return n.float;
      throw new ExecFail(`expected ${expectedName(kind)}; found ${n.text}`);
  }
  if (keepInvalid) return v;
  return validateArg(v, kind);
}
