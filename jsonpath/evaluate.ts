import { isJsonObject, jsonEqual, JsonValue } from '../util/json';
import { BUDGET_CHECK_STEPS, RequestBudget } from '../util/budget';
import { compileRegex, RegexSyntaxError, SafeRegex } from '../util/regex';
import { BinaryNode, CallNode, isAmbiguous, JsonPathNode, PathNode, Segment } from './ast';
import { JsonPathLimitError, JsonPathSyntaxError } from './errors';
import { compareOrder, ERR, lengthOf, looseEquals, toBool, toFloat, toText, UNDEF, Val } from './values';

/** One value a select yields. */
export interface SelectResult {
  value: JsonValue;
  /** RFC6901 pointer of the value; null for computed values (booleans, arithmetic, function results). */
  path: string | null;
  /** What each wildcard, union, slice, filter and recursive descent captured, in order. */
  indices: Array<number | string>;
}

/** Node visits one select() may make before it gives up (guards `$..*..*`-style selects on huge objects). */
export const MAX_VISITS = 1_000_000;
/** Most results one select() may yield. */
export const MAX_RESULTS = 10_000;
/** Deepest level a recursive descent (`..`) walks into. */
export const MAX_DESCENT_DEPTH = 512;

interface PathLink {
  readonly parent: PathLink | null;
  readonly key: string | number;
}
// A descent capture is kept as two path links (where the descent began, where it is) and only turned into a
// pointer string for values that are actually yielded: deep objects would otherwise cost O(depth) per node.
interface Relative {
  readonly from: PathLink | null;
  readonly to: PathLink | null;
}
interface IndexLink {
  readonly parent: IndexLink | null;
  readonly key: string | number | Relative;
}
type Sink = (value: JsonValue, path: PathLink | null, indices: IndexLink | null) => void;
interface Ctx {
  readonly root: JsonValue;
  visits: number;
  /** Next visit count at which checkpoint() runs: MAX_VISITS, or sooner when a request budget is charged. */
  checkAt: number;
  /** The request's budget, charged every BUDGET_CHECK_STEPS visits; null when evaluated alone. */
  readonly budget: RequestBudget | null;
  charged: number;
  /** Work beyond node visits (regex tests), charged to the request budget but not counted as visits. */
  extra: number;
  sink: Sink;
}
type Expr = (ctx: Ctx, current: JsonValue) => Val;
type Cont = (ctx: Ctx, value: JsonValue, path: PathLink | null, indices: IndexLink | null) => void;

const noopSink: Sink = () => undefined;
const hasOwn = Object.prototype.hasOwnProperty;
const CANONICAL_INDEX = /^(?:0|[1-9][0-9]*)$/;

function visit(ctx: Ctx): void {
  if (++ctx.visits > ctx.checkAt) checkpoint(ctx);
}

// The per-select visit counter doubles as the request budget's meter: one comparison per visit either way.
function checkpoint(ctx: Ctx): void {
  if (ctx.visits > MAX_VISITS) {
    throw new JsonPathLimitError(`select visited more than ${MAX_VISITS} nodes; simplify the select`);
  }
  settle(ctx);
  ctx.checkAt = Math.min(MAX_VISITS, ctx.visits + BUDGET_CHECK_STEPS);
}

function newCtx(root: JsonValue, budget: RequestBudget | undefined, sink: Sink): Ctx {
  const b = budget ?? null;
  return {
    root,
    visits: 0,
    checkAt: b ? BUDGET_CHECK_STEPS : MAX_VISITS,
    budget: b,
    charged: 0,
    extra: 0,
    sink,
  };
}

// Charges the visits not yet charged (one per evaluation at least, so a request of many tiny selects pays too).
function settle(ctx: Ctx): void {
  if (!ctx.budget) return;
  const total = ctx.visits + ctx.extra;
  const n = Math.max(total - ctx.charged, 1);
  ctx.charged = total;
  ctx.budget.charge(n);
}

// A regex test costs as much as a dozen visits and more for long inputs: charged in proportion, and brought forward
// to the next visit's checkpoint, so the deadline is read at most every BUDGET_CHECK_STEPS steps of work.
function spend(ctx: Ctx, n: number): void {
  if (!ctx.budget) return;
  ctx.extra += n;
  ctx.checkAt -= n;
}

/** Escapes one RFC6901 reference token. */
export function escapeToken(token: string): string {
  return token.indexOf('~') < 0 && token.indexOf('/') < 0
    ? token
    : token.replace(/~/g, '~0').replace(/\//g, '~1');
}

// The path link of a value computed by a script selector: it has no pointer in the object, nor have its members.
const COMPUTED: PathLink = { parent: null, key: '' };

// Joins rather than prepends: prepending builds rope strings whose memory grows with depth for every result.
function pointerBetween(to: PathLink | null, from: PathLink | null): string | null {
  const parts: string[] = [];
  for (let l = to; l && l !== from; l = l.parent) {
    if (l === COMPUTED) return null;
    parts.push(typeof l.key === 'number' ? String(l.key) : escapeToken(l.key));
  }
  if (parts.length === 0) return '';
  parts.push('');
  return parts.reverse().join('/');
}

function pointerOf(link: PathLink | null): string | null {
  return pointerBetween(link, null);
}

// A descent starts and ends on the same side of any script (its capture is taken before later steps run).
function relativePointer(rel: Relative): string {
  return pointerBetween(rel.to, rel.from) ?? '';
}

function indicesOf(link: IndexLink | null): Array<number | string> {
  const out: Array<number | string> = [];
  for (let l = link; l; l = l.parent) out.push(typeof l.key === 'object' ? relativePointer(l.key) : l.key);
  return out.reverse();
}

// A child by name: object member, or array element when the name is a canonical index (gval converts keys).
function childByName(v: JsonValue, name: string): JsonValue | typeof UNDEF {
  if (isJsonObject(v)) return hasOwn.call(v, name) ? v[name] : UNDEF;
  if (Array.isArray(v) && CANONICAL_INDEX.test(name)) {
    const i = Number(name);
    return i < v.length ? v[i] : UNDEF;
  }
  return UNDEF;
}

function arrayIndex(v: JsonValue[], index: number): number {
  const i = index < 0 ? v.length + index : index;
  return i >= 0 && i < v.length ? i : -1;
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
  const walk = compileSegments(node.segments, 0);
  return (root, budget) => {
    const results: SelectResult[] = [];
    const ctx = newCtx(root, budget, (value, path, indices) => {
      if (results.length >= MAX_RESULTS) {
        throw new JsonPathLimitError(`select yielded more than ${MAX_RESULTS} results; narrow the select`);
      }
      results.push({ value, path: pointerOf(path), indices: indicesOf(indices) });
    });
    walk(ctx, root, null, null);
    settle(ctx);
    return results;
  };
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

// Builds the continuation chain for segments[i..]: each step hands every value it yields to the next.
function compileSegments(segments: readonly Segment[], i: number): Cont {
  if (i === segments.length) return (ctx, v, p, ix) => ctx.sink(v, p, ix);
  const seg = segments[i];
  const next = compileSegments(segments, i + 1);
  switch (seg.type) {
    case 'name': {
      const name = seg.name;
      return (ctx, v, p, ix) => {
        const c = childByName(v, name);
        if (c !== UNDEF) next(ctx, c, { parent: p, key: Array.isArray(v) ? Number(name) : name }, ix);
      };
    }
    case 'index': {
      const index = seg.index;
      const name = String(index);
      return (ctx, v, p, ix) => {
        if (Array.isArray(v)) {
          const j = arrayIndex(v, index);
          if (j >= 0) next(ctx, v[j], { parent: p, key: j }, ix);
        } else if (isJsonObject(v) && hasOwn.call(v, name)) {
          next(ctx, v[name], { parent: p, key: name }, ix);
        }
      };
    }
    case 'key': {
      const key = compileExpr(seg.key);
      return (ctx, v, p, ix) => {
        const k = key(ctx, v);
        if (typeof k === 'number' && Array.isArray(v)) {
          const j = arrayIndex(v, Math.trunc(k));
          if (j >= 0) next(ctx, v[j], { parent: p, key: j }, ix);
        } else if (typeof k === 'string' || typeof k === 'number') {
          const name = typeof k === 'number' ? toText(k) : k;
          const c = childByName(v, name);
          if (c !== UNDEF) next(ctx, c, { parent: p, key: Array.isArray(v) ? Number(name) : name }, ix);
        }
      };
    }
    case 'wildcard':
      return (ctx, v, p, ix) => {
        if (Array.isArray(v)) {
          for (let j = 0; j < v.length; j++) {
            visit(ctx);
            next(ctx, v[j], { parent: p, key: j }, { parent: ix, key: j });
          }
        } else if (isJsonObject(v)) {
          for (const k of Object.keys(v)) {
            visit(ctx);
            next(ctx, v[k], { parent: p, key: k }, { parent: ix, key: k });
          }
        }
      };
    case 'union': {
      const keys = seg.keys;
      return (ctx, v, p, ix) => {
        for (const key of keys) {
          visit(ctx);
          if (Array.isArray(v)) {
            const j =
              typeof key === 'number'
                ? arrayIndex(v, key)
                : CANONICAL_INDEX.test(key)
                  ? arrayIndex(v, Number(key))
                  : -1;
            if (j >= 0) next(ctx, v[j], { parent: p, key: j }, { parent: ix, key: j });
          } else if (isJsonObject(v)) {
            const name = String(key);
            if (hasOwn.call(v, name)) next(ctx, v[name], { parent: p, key: name }, { parent: ix, key: name });
          }
        }
      };
    }
    case 'slice': {
      const { start, end } = seg;
      const step = seg.step === null || seg.step === 0 ? 1 : seg.step;
      return (ctx, v, p, ix) => {
        if (!Array.isArray(v)) return;
        const n = v.length;
        const clamp = (x: number) => (x < 0 ? Math.max(n + x, 0) : Math.min(x, n));
        const lo = start === null ? 0 : clamp(start);
        const hi = end === null ? n : clamp(end);
        if (step > 0) {
          for (let j = lo; j < hi; j += step) {
            visit(ctx);
            next(ctx, v[j], { parent: p, key: j }, { parent: ix, key: j });
          }
        } else {
          for (let j = hi - 1; j >= lo; j += step) {
            visit(ctx);
            next(ctx, v[j], { parent: p, key: j }, { parent: ix, key: j });
          }
        }
      };
    }
    case 'filter': {
      const predicate = compileExpr(seg.predicate);
      const test = (ctx: Ctx, v: JsonValue) => {
        const r = predicate(ctx, v);
        return r !== UNDEF && r !== ERR && toBool(r) === true;
      };
      return (ctx, v, p, ix) => {
        if (Array.isArray(v)) {
          for (let j = 0; j < v.length; j++) {
            visit(ctx);
            if (test(ctx, v[j])) next(ctx, v[j], { parent: p, key: j }, { parent: ix, key: j });
          }
        } else if (isJsonObject(v)) {
          for (const k of Object.keys(v)) {
            visit(ctx);
            if (test(ctx, v[k])) next(ctx, v[k], { parent: p, key: k }, { parent: ix, key: k });
          }
        }
      };
    }
    case 'script': {
      // KubeMod's newScript: a plain step, so it captures nothing; an undefined or failing result drops the value.
      const script = compileExpr(seg.script);
      return (ctx, v, _p, ix) => {
        visit(ctx);
        const r = script(ctx, v);
        if (r !== UNDEF && r !== ERR) next(ctx, r, COMPUTED, ix);
      };
    }
    case 'descent': {
      // Pre-order over the node and all its descendants; captures the pointer relative to where the descent began.
      const descend = (
        ctx: Ctx,
        v: JsonValue,
        p: PathLink | null,
        ix: IndexLink | null,
        from: PathLink | null,
        depth: number,
      ): void => {
        visit(ctx);
        next(ctx, v, p, { parent: ix, key: { from, to: p } });
        const isArray = Array.isArray(v);
        if (!isArray && !isJsonObject(v)) return;
        if (depth >= MAX_DESCENT_DEPTH && (isArray ? v.length : Object.keys(v).length)) {
          throw new JsonPathLimitError(`recursive descent deeper than ${MAX_DESCENT_DEPTH} levels`);
        }
        if (isArray) {
          for (let j = 0; j < v.length; j++) descend(ctx, v[j], { parent: p, key: j }, ix, from, depth + 1);
        } else {
          for (const k of Object.keys(v)) descend(ctx, v[k], { parent: p, key: k }, ix, from, depth + 1);
        }
      };
      return (ctx, v, p, ix) => descend(ctx, v, p, ix, p, 0);
    }
  }
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
      return compileCall(node);
    case 'binary':
      return compileBinary(node);
  }
}

function compileExprPath(node: PathNode): Expr {
  const fromRoot = node.root === '$';
  if (!node.segments.some(isAmbiguous)) {
    const steps = node.segments.map(compilePlainStep);
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
  const walk = compileSegments(node.segments, 0);
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

function compilePlainStep(seg: Segment): (ctx: Ctx, v: JsonValue) => Val {
  switch (seg.type) {
    case 'script': {
      // An error inside the script is an error of the whole expression, as in KubeMod's plainPath.evaluatePath.
      const script = compileExpr(seg.script);
      return (ctx, v) => {
        visit(ctx);
        return script(ctx, v);
      };
    }
    case 'name': {
      const name = seg.name;
      return (_ctx, v) => (isJsonObject(v) ? (hasOwn.call(v, name) ? v[name] : UNDEF) : childByName(v, name));
    }
    case 'index': {
      const index = seg.index;
      const name = String(index);
      return (_ctx, v) => {
        if (Array.isArray(v)) {
          const j = arrayIndex(v, index);
          return j >= 0 ? v[j] : UNDEF;
        }
        return isJsonObject(v) && hasOwn.call(v, name) ? v[name] : UNDEF;
      };
    }
    case 'key': {
      const key = compileExpr(seg.key);
      return (ctx, v) => {
        const k = key(ctx, v);
        if (typeof k === 'number' && Array.isArray(v)) {
          const j = arrayIndex(v, Math.trunc(k));
          return j >= 0 ? v[j] : UNDEF;
        }
        if (typeof k === 'string' || typeof k === 'number')
          return childByName(v, typeof k === 'number' ? toText(k) : k);
        return UNDEF;
      };
    }
    default:
      throw new Error(`internal: ${seg.type} is not a plain step`);
  }
}

function compileCall(node: CallNode): Expr {
  const arg = compileExpr(node.args[0]);
  switch (node.name) {
    case 'isDefined':
      return (ctx, cur) => {
        const v = arg(ctx, cur);
        return v === ERR ? ERR : v !== UNDEF;
      };
    case 'isUndefined':
      return (ctx, cur) => {
        const v = arg(ctx, cur);
        return v === ERR ? ERR : v === UNDEF;
      };
    case 'isEmpty':
      return (ctx, cur) => {
        const v = arg(ctx, cur);
        if (v === ERR) return ERR;
        const n = lengthOf(v);
        return n === ERR ? ERR : n === 0;
      };
    case 'isNotEmpty':
      return (ctx, cur) => {
        const v = arg(ctx, cur);
        if (v === ERR) return ERR;
        const n = lengthOf(v);
        return n === ERR ? ERR : n !== 0;
      };
    case 'length':
      return (ctx, cur) => {
        const v = arg(ctx, cur);
        return v === ERR ? ERR : lengthOf(v);
      };
  }
}

// Patterns without metacharacters (`=~ "nginx"`, the common case) match as substrings: same result, no native call.
const PLAIN_PATTERN = /^[^\\.+*?()|[\]{}^$]*$/;

function compileRegexOperand(node: JsonPathNode): Pick<SafeRegex, 'test'> | null {
  if (node.kind !== 'literal' || typeof node.value !== 'string') return null;
  try {
    const re = compileRegex(node.value);
    const pattern = node.value;
    return PLAIN_PATTERN.test(pattern) ? { test: (s: string) => s.includes(pattern) } : re;
  } catch (err) {
    if (err instanceof RegexSyntaxError) {
      throw new JsonPathSyntaxError(
        node.column,
        'a valid RE2 regular expression',
        `${JSON.stringify(node.value)} (${err.message})`,
      );
    }
    throw err;
  }
}

/** Request budget steps of one regex test (plus one per 16 characters tested): about 2 µs of RE2 through node. */
const REGEX_TEST_STEPS = 16;

// Regexes built at run time from paths: small per-select cache so a filter over many elements compiles once.
function dynamicRegex(cache: Map<string, SafeRegex | null>, pattern: string): SafeRegex | null {
  let re = cache.get(pattern);
  if (re === undefined) {
    try {
      re = compileRegex(pattern);
    } catch {
      re = null;
    }
    if (cache.size >= 32) cache.clear();
    cache.set(pattern, re);
  }
  return re;
}

function compileBinary(node: BinaryNode): Expr {
  const left = compileExpr(node.left);
  if (node.op === '=~' || node.op === '!~') {
    const negate = node.op === '!~';
    const literal = compileRegexOperand(node.right);
    const right = compileExpr(node.right);
    const cache = new Map<string, SafeRegex | null>();
    return (ctx, cur) => {
      const a = left(ctx, cur);
      if (a === ERR) return ERR;
      let re: Pick<SafeRegex, 'test'> | null = literal;
      if (!re) {
        const b = right(ctx, cur);
        if (b === ERR || b === UNDEF) return b === ERR ? ERR : false;
        re = dynamicRegex(cache, toText(b));
        if (!re) return ERR;
      }
      if (a === UNDEF) return false;
      const text = toText(a);
      spend(ctx, REGEX_TEST_STEPS + (text.length >> 4));
      return re.test(text) !== negate;
    };
  }
  const right = compileExpr(node.right);
  // Each operator gets its own closure, repeating the left/right error checks: routing them through one shared
  // helper doubled the cost of a filter (V8 stops inlining a callback shared by every operator).
  switch (node.op) {
    case '&&':
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === false) return false;
        if (a !== true) return ERR;
        const b = right(ctx, cur);
        return typeof b === 'boolean' ? b : ERR;
      };
    case '||':
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === true) return true;
        if (a !== false) return ERR;
        const b = right(ctx, cur);
        return typeof b === 'boolean' ? b : ERR;
      };
    case '==':
    case '!=': {
      const want = node.op === '==';
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === ERR) return ERR;
        const b = right(ctx, cur);
        if (b === ERR) return ERR;
        if (a === UNDEF || b === UNDEF) return false;
        return looseEquals(a, b) === want;
      };
    }
    case 'in':
      // KubeMod's inArray: the right side must be a list; membership is reflect.DeepEqual (no conversions).
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === ERR) return ERR;
        const b = right(ctx, cur);
        if (!Array.isArray(b)) return ERR;
        if (a === UNDEF) return false;
        return b.some((x) => jsonEqual(a, x));
      };
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const op = node.op;
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === ERR) return ERR;
        const b = right(ctx, cur);
        if (b === ERR) return ERR;
        if (a === UNDEF || b === UNDEF) return false;
        const c = compareOrder(a, b);
        if (Number.isNaN(c)) return false;
        return op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;
      };
    }
    case '+':
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === ERR) return ERR;
        const b = right(ctx, cur);
        if (b === ERR) return ERR;
        if (a === UNDEF || b === UNDEF) return UNDEF;
        if (typeof a === 'number' && typeof b === 'number') return a + b;
        if (typeof a === 'string' && typeof b === 'string') return a + b;
        const fa = toFloat(a);
        const fb = toFloat(b);
        if (fa !== undefined && fb !== undefined) return fa + fb;
        return toText(a) + toText(b);
      };
    default: {
      const op = node.op;
      return (ctx, cur) => {
        const a = left(ctx, cur);
        if (a === ERR) return ERR;
        const b = right(ctx, cur);
        if (b === ERR) return ERR;
        if (a === UNDEF || b === UNDEF) return UNDEF;
        const fa = toFloat(a);
        const fb = toFloat(b);
        if (fa === undefined || fb === undefined) return ERR;
        const r = op === '-' ? fa - fb : op === '*' ? fa * fb : op === '/' ? fa / fb : fa % fb;
        // JSON has no NaN/Infinity (division by zero): treat as an evaluation error.
        return Number.isFinite(r) ? r : ERR;
      };
    }
  }
}
