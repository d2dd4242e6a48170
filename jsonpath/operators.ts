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
      const text = textIn(ctx, a);
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
        return textIn(ctx, a) + textIn(ctx, b);
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
