import { isJsonObject, JsonValue } from '../util/json';
import { RequestBudget } from '../util/budget';
import { isAmbiguous, JsonPathNode, PathNode } from './ast';
import { JsonPathLimitError } from './errors';
import { ERR, toFloat, UNDEF } from './values';
import { Expr, MAX_RESULTS, newCtx, noopSink, settle, work } from './eval-context';
import { childByName, escapeToken, hasOwn, indicesOf, pointerOf } from './pointers';
import { compilePlainStep, compileSegments } from './steps';
import { compileBinary, compileCall } from './operators';

/*
 * A select compiles to closures once (compileSelect) and runs many times. The parts: eval-context.ts (the visit
 * meter, limits and request budget), pointers.ts (where a value sits), steps.ts (path steps), operators.ts
 * (function calls and binary operators).
 */
export { MAX_VISITS, MAX_RESULTS, MAX_DESCENT_DEPTH } from './eval-context';
export { escapeToken } from './pointers';

/** One value a select yields. */
export interface SelectResult {
  value: JsonValue;
  /** RFC6901 pointer of the value; null for computed values (booleans, arithmetic, function results). */
  path: string | null;
  /** What each wildcard, union, slice, filter and recursive descent captured, in order. */
  indices: Array<number | string>;
}

/** A compiled select; the request budget, when given, is charged for the nodes it visits. */
export type SelectFn = (root: JsonValue, budget?: RequestBudget) => SelectResult[];

/** Compiles a parsed select into a function yielding its results. */
export function compileSelect(ast: JsonPathNode): SelectFn {
  if (ast.kind === 'path') return compileTopPath(ast);
  const expr = compileExpr(ast);
  return (root, budget) => {
    const ctx = newCtx(root, budget, noopSink);
    const v = expr(ctx, root);
    settle(ctx);
    if (v === UNDEF || v === ERR) return [];
    return [{ value: v, path: null, indices: [] }];
  };
}

function compileTopPath(node: PathNode): SelectFn {
  // Fast path: only static names and non-negative indices, so the pointer is known at compile time.
  const staticKeys: (string | number)[] = [];
  for (const s of node.segments) {
    if (s.type === 'name') staticKeys.push(s.name);
    else if (s.type === 'index' && s.index >= 0) staticKeys.push(s.index);
    else break;
  }
  if (staticKeys.length === node.segments.length) {
    const pointer = staticKeys
      .map((k) => '/' + (typeof k === 'number' ? String(k) : escapeToken(k)))
      .join('');
    const get = compileStaticGetter(staticKeys);
    return (root, budget) => {
      budget?.charge(1);
      const v = get(root);
      return v === UNDEF ? [] : [{ value: v, path: pointer, indices: [] }];
    };
  }
  const walk = compileSegments(node.segments, 0, compileExpr);
  return (root, budget) => {
    const results: SelectResult[] = [];
    const ctx = newCtx(root, budget, (value, path, indices) => {
      if (results.length >= MAX_RESULTS) {
        throw new JsonPathLimitError(`select yielded more than ${MAX_RESULTS} results; narrow the select`);
      }
      const pointer = pointerOf(path);
      const captured = indicesOf(indices);
      results.push({ value, path: pointer, indices: captured });
      // A result costs several visits (its pointer, its captures), and pointers their depth: a 20,000-element
      // select or a recursive descent 900 levels down pays for it as it goes.
      work(ctx, RESULT_STEPS + (((pointer?.length ?? 0) + captureChars(captured)) >> 4));
    });
    walk(ctx, root, null, null);
    settle(ctx);
    return results;
  };
}

/** What one result of a select costs beyond its visit: building its pointer and captures (~0.5-1 us). */
export const RESULT_STEPS = 4;

// The text the captured indices hold (descent captures are relative pointers).
function captureChars(captured: ReadonlyArray<number | string>): number {
  let n = 0;
  for (const c of captured) if (typeof c === 'string') n += c.length;
  return n;
}

function compileStaticGetter(keys: readonly (string | number)[]): (v: JsonValue) => JsonValue | typeof UNDEF {
  if (keys.length === 0) return (v) => v;
  if (keys.length === 1 && typeof keys[0] === 'string') {
    const k = keys[0];
    return (v) => (isJsonObject(v) && hasOwn.call(v, k) ? v[k] : childByName(v, k));
  }
  const names = keys.map(String);
  return (root) => {
    let v: JsonValue = root;
    for (let i = 0; i < names.length; i++) {
      const k = names[i];
      let next: JsonValue | typeof UNDEF;
      if (isJsonObject(v)) next = hasOwn.call(v, k) ? v[k] : UNDEF;
      else next = childByName(v, k);
      if (next === UNDEF) return UNDEF;
      v = next;
    }
    return v;
  };
}

/** Compiles an expression node; paths inside yield a value, UNDEF, or (when ambiguous) the array of matches. */
function compileExpr(node: JsonPathNode): Expr {
  switch (node.kind) {
    case 'literal': {
      const value = node.value;
      return () => value;
    }
    case 'path':
      return compileExprPath(node);
    case 'array': {
      const items = node.items.map(compileExpr);
      // An undefined element is left out: it could only ever be compared (and never equal) anyway.
      return (ctx, cur) => {
        const out: JsonValue[] = [];
        for (const item of items) {
          const v = item(ctx, cur);
          if (v === ERR) return ERR;
          if (v !== UNDEF) out.push(v);
        }
        return out;
      };
    }
    case 'unary': {
      const operand = compileExpr(node.operand);
      if (node.op === '!') {
        // KubeMod's `!` takes booleans only.
        return (ctx, cur) => {
          const v = operand(ctx, cur);
          return typeof v === 'boolean' ? !v : ERR;
        };
      }
      return (ctx, cur) => {
        const v = operand(ctx, cur);
        if (v === UNDEF || v === ERR) return v;
        const f = toFloat(v);
        return f === undefined ? ERR : -f;
      };
    }
    case 'call':
      return compileCall(node, compileExpr);
    case 'binary':
      return compileBinary(node, compileExpr);
  }
}

function compileExprPath(node: PathNode): Expr {
  const fromRoot = node.root === '$';
  if (!node.segments.some(isAmbiguous)) {
    const steps = node.segments.map((s) => compilePlainStep(s, compileExpr));
    return (ctx, cur) => {
      let v: JsonValue = fromRoot ? ctx.root : cur;
      for (let i = 0; i < steps.length; i++) {
        const n = steps[i](ctx, v);
        if (n === UNDEF || n === ERR) return n;
        v = n;
      }
      return v;
    };
  }
  const walk = compileSegments(node.segments, 0, compileExpr);
  return (ctx, cur) => {
    const out: JsonValue[] = [];
    const saved = ctx.sink;
    ctx.sink = (value) => out.push(value);
    try {
      walk(ctx, fromRoot ? ctx.root : cur, null, null);
    } finally {
      ctx.sink = saved;
    }
    return out;
  };
}
