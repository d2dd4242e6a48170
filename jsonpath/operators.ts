import { jsonEqual } from '../util/json';
import { effectiveTag, ImageReference, imageReferenceOf } from '../util/image-reference';
import { compileRegex, RegexSyntaxError, SafeRegex } from '../util/regex';
import { BinaryNode, CallNode, ImageFunctionName, JsonPathNode } from './ast';
import { JsonPathSyntaxError } from './errors';
import { compareOrder, ERR, lengthOf, looseEquals, toFloat, toText, UNDEF } from './values';
import { Expr, spend, textIn } from './eval-context';
import type { ExprCompiler } from './steps';

/**
 * Compiles a function call (isDefined, isUndefined, isEmpty, isNotEmpty, length; imageRegistry, imageRepository,
 * imageTag, imageDigest: a part of a string that is an image reference, undefined for anything else).
 */
export function compileCall(node: CallNode, compileExpr: ExprCompiler): Expr {
  const arg = compileExpr(node.args[0]);
  switch (node.name) {
    case 'imageRegistry':
    case 'imageRepository':
    case 'imageTag':
    case 'imageDigest': {
      const part = IMAGE_PARTS[node.name];
      return (ctx, cur) => {
        const v = arg(ctx, cur);
        if (v === ERR || typeof v !== 'string') return v === ERR ? ERR : UNDEF;
        spend(ctx, 1 + (v.length >> 6));
        const ref = imageReferenceOf(v);
        return ref === undefined ? UNDEF : part(ref);
      };
    }
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

const IMAGE_PARTS: Record<ImageFunctionName, (ref: ImageReference) => string> = {
  imageRegistry: (r) => r.registry,
  imageRepository: (r) => r.repository,
  imageTag: effectiveTag,
  imageDigest: (r) => r.digest,
};

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

/** Compiles a binary operator with KubeMod's (gval's) semantics. */
export function compileBinary(node: BinaryNode, compileExpr: ExprCompiler): Expr {
  const left = compileExpr(node.left);
  const op = node.op;
  if (op === '=~' || op === '!~') return compileMatch(left, node.right, op === '!~', compileExpr);
  const right = compileExpr(node.right);
  // Each operator gets its own closure, repeating the left/right error checks: routing them through one shared
  // helper doubled the cost of a filter (V8 stops inlining a callback shared by every operator).
  switch (op) {
    case '&&':
    case '||':
      return compileLogical(op, left, right);
    case '==':
    case '!=':
    case 'in':
      return compileEquality(op, left, right);
    case '<':
    case '<=':
    case '>':
    case '>=':
      return compileOrder(op, left, right);
    default:
      return compileArithmetic(op, left, right);
  }
}

/** `=~` and `!~`: a literal pattern compiled once, a computed one through a small cache. */
function compileMatch(left: Expr, rightNode: JsonPathNode, negate: boolean, compileExpr: ExprCompiler): Expr {
  const literal = compileRegexOperand(rightNode);
  const right = compileExpr(rightNode);
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
    const text = textIn(ctx, a);
    spend(ctx, REGEX_TEST_STEPS + (text.length >> 4));
    return re.test(text) !== negate;
  };
}

/** `&&` and `||`: booleans only, the right side evaluated only when the left does not decide. */
function compileLogical(op: '&&' | '||', left: Expr, right: Expr): Expr {
  if (op === '&&')
    return (ctx, cur) => {
      const a = left(ctx, cur);
      if (a === false) return false;
      if (a !== true) return ERR;
      const b = right(ctx, cur);
      return typeof b === 'boolean' ? b : ERR;
    };
  return (ctx, cur) => {
    const a = left(ctx, cur);
    if (a === true) return true;
    if (a !== false) return ERR;
    const b = right(ctx, cur);
    return typeof b === 'boolean' ? b : ERR;
  };
}

/** `==` and `!=` (gval's loose equality), and `in`. */
function compileEquality(op: '==' | '!=' | 'in', left: Expr, right: Expr): Expr {
  if (op === 'in')
    // KubeMod's inArray: the right side must be a list; membership is reflect.DeepEqual (no conversions).
    return (ctx, cur) => {
      const a = left(ctx, cur);
      if (a === ERR) return ERR;
      const b = right(ctx, cur);
      if (!Array.isArray(b)) return ERR;
      if (a === UNDEF) return false;
      return b.some((x) => jsonEqual(a, x));
    };
  const want = op === '==';
  return (ctx, cur) => {
    const a = left(ctx, cur);
    if (a === ERR) return ERR;
    const b = right(ctx, cur);
    if (b === ERR) return ERR;
    if (a === UNDEF || b === UNDEF) return false;
    return looseEquals(a, b) === want;
  };
}

/** `<`, `<=`, `>`, `>=`: false when either side is undefined or the two do not compare. */
function compileOrder(op: '<' | '<=' | '>' | '>=', left: Expr, right: Expr): Expr {
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

/** `+` (numbers, strings, or the two as text) and `-`, `*`, `/`, `%` (numbers only). */
function compileArithmetic(op: '+' | '-' | '*' | '/' | '%', left: Expr, right: Expr): Expr {
  if (op === '+')
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
      return textIn(ctx, a) + textIn(ctx, b);
    };
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
