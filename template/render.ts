import { BudgetExhaustedError, RequestBudget } from '../util/budget';
import { BranchNode, Node, TemplateTree } from './ast';
import { TemplateRuntimeError } from './errors';
import { Budget, formatValue, GoValue, isMap, isTrue, sortedKeys, useMeter } from './values';
import { DEFAULT_LIMITS, ExecState, nameText, RenderLimits, TemplateName } from './exec-state';
import { evalPipeline } from './pipeline';
import { messageOf } from '../util/errors';

/*
 * Rendering a template, as Go's text/template Execute does. The parts: exec-state.ts (one render's state: limits, step
 * budget, output, variables, regex cache), pipeline.ts (pipelines, commands, function calls), exec-args.ts (Go's
 * argument rules); this file walks the tree (text, actions, if/with/range, template calls).
 */
export { DEFAULT_LIMITS } from './exec-state';
export type { RenderLimits, TemplateName } from './exec-state';

const BREAK = 1;
const CONTINUE = 2;

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
    const state = new ExecState(tree, data, limits, budget ?? null, name);
    const outer = useMeter(state);
    try {
      return run(state);
    } finally {
      useMeter(outer);
    }
  } catch (e) {
    if (e instanceof TemplateRuntimeError || e instanceof BudgetExhaustedError) throw e;
    // Anything else (e.g. a stack overflow from deep nesting) is still this template's failure, not the process's.
    throw new TemplateRuntimeError(`template: ${nameText(name)}: ${messageOf(e)}`);
  }
}

/** Walks the whole tree and returns the output, with the steps charged to the request budget. */
function run(s: ExecState): string {
  walk(s, s.vars[0].value, s.tree.root);
  s.settle();
  return s.output();
}

// Walks a list of nodes; returns BREAK/CONTINUE when a loop control was hit.
function walk(s: ExecState, dot: GoValue, nodes: readonly Node[]): number {
  for (const node of nodes) {
    s.charge(1);
    switch (node.type) {
      case 'text':
        s.write(node.text);
        break;
      case 'action': {
        const v = evalPipeline(s, dot, node.pipe);
        if (node.pipe.decl.length === 0) {
          let text: string;
          try {
            text = typeof v === 'string' ? v : formatValue(v, new Budget(Math.max(s.remaining, 0)));
          } catch (e) {
            // The request's budget running out is the request's (or the rule's) failure, not this template's; the
            // render's own step limit says where it was reached already.
            if (e instanceof BudgetExhaustedError) throw e;
            if (e instanceof TemplateRuntimeError && e.message.startsWith('template: ')) throw e;
            s.fail(node.pos, node.text, messageOf(e));
          }
          s.write(text);
        }
        break;
      }
      case 'if':
      case 'with': {
        const r = walkIfOrWith(s, dot, node);
        if (r) return r;
        break;
      }
      case 'range': {
        const r = walkRange(s, dot, node);
        if (r) return r;
        break;
      }
      case 'template':
        walkTemplate(s, dot, node);
        break;
      case 'break':
        return BREAK;
      case 'continue':
        return CONTINUE;
    }
  }
  return 0;
}

function walkIfOrWith(s: ExecState, dot: GoValue, node: BranchNode): number {
  const mark = s.vars.length;
  try {
    const v = evalPipeline(s, dot, node.pipe);
    if (isTrue(v)) return walk(s, node.type === 'with' ? v : dot, node.list);
    if (node.elseList) return walk(s, dot, node.elseList);
    return 0;
  } finally {
    s.vars.length = mark;
  }
}

function walkRange(s: ExecState, dot: GoValue, node: BranchNode): number {
  const mark = s.vars.length;
  try {
    const v = evalPipeline(s, dot, node.pipe);
    const decl = node.pipe.decl;
    const iterMark = s.vars.length;
    const one = (key: GoValue, elem: GoValue): number => {
      s.charge(1);
      if (decl.length > 0) {
        if (node.pipe.isAssign) {
          if (decl.length > 1) {
            s.setVar(decl[0], key);
            s.setVar(decl[1], elem);
          } else s.setVar(decl[0], elem);
        } else {
          // Declared variables sit at the top of the stack: last is the element, first the key.
          s.vars[s.vars.length - 1].value = decl.length > 1 ? elem : elem;
          if (decl.length > 1) s.vars[s.vars.length - 2].value = key;
        }
      }
      const r = walk(s, elem, node.list);
      s.vars.length = iterMark;
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
      s.fail(node.pos, node.text, `range can't iterate over ${formatValue(v)}`);
    }
    if (count === 0 && node.elseList) return walk(s, dot, node.elseList);
    return 0;
  } finally {
    s.vars.length = mark;
  }
}

function walkTemplate(s: ExecState, dot: GoValue, node: Extract<Node, { type: 'template' }>): void {
  const body = s.tree.defines.get(node.name);
  if (!body) s.fail(node.pos, node.text, `no such template ${JSON.stringify(node.name)}`);
  if (s.depth >= s.limits.maxDepth) {
    s.fail(node.pos, node.text, `exceeded maximum template depth (${s.limits.maxDepth})`);
  }
  const newDot = node.pipe ? evalPipeline(s, dot, node.pipe) : null;
  const saved = s.vars;
  s.vars = [{ name: '$', value: newDot }];
  s.depth++;
  try {
    walk(s, newDot, body);
  } finally {
    s.depth--;
    s.vars = saved;
  }
}
