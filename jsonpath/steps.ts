import { isJsonObject, JsonValue } from '../util/json';
import { JsonPathNode, Segment } from './ast';
import { JsonPathLimitError } from './errors';
import { ERR, toBool, toText, UNDEF, Val } from './values';
import { Cont, Ctx, Expr, MAX_DESCENT_DEPTH, visit } from './eval-context';
import { arrayIndex, CANONICAL_INDEX, childByName, COMPUTED, hasOwn, IndexLink, Relative } from './pointers';

/** Compiles an expression node; passed in, as expressions hold paths and paths hold expressions (filters, keys). */
export type ExprCompiler = (node: JsonPathNode) => Expr;

// Builds the continuation chain for segments[i..]: each step hands every value it yields to the next.
export function compileSegments(segments: readonly Segment[], i: number, compileExpr: ExprCompiler): Cont {
  if (i === segments.length) return (ctx, v, p, ix) => ctx.sink(v, p, ix);
  const next = compileSegments(segments, i + 1, compileExpr);
  const seg = segments[i];
  switch (seg.type) {
    case 'name':
      return nameStep(seg.name, next);
    case 'index':
      return indexStep(seg.index, next);
    case 'key':
      return keyStep(compileExpr(seg.key), next);
    case 'wildcard':
      return wildcardStep(next);
    case 'union':
      return unionStep(seg.keys, next);
    case 'slice':
      return sliceStep(seg, next);
    case 'filter':
      return filterStep(compileExpr(seg.predicate), next);
    case 'script':
      return scriptStep(compileExpr(seg.script), next);
    case 'descent':
      return descentStep(next);
  }
}

// One function per segment type below: each returns the step's closure, which captures only what it reads.

function nameStep(name: string, next: Cont): Cont {
  return (ctx, v, p, ix) => {
    const c = childByName(v, name);
    if (c !== UNDEF) next(ctx, c, { parent: p, key: Array.isArray(v) ? Number(name) : name }, ix);
  };
}

function indexStep(index: number, next: Cont): Cont {
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

function keyStep(key: Expr, next: Cont): Cont {
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

function wildcardStep(next: Cont): Cont {
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
}

function unionStep(keys: ReadonlyArray<string | number>, next: Cont): Cont {
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

/** A slice bound (negative from the end) clamped to an array of length n. */
function clamp(x: number, n: number): number {
  return x < 0 ? Math.max(n + x, 0) : Math.min(x, n);
}

function sliceStep(seg: Extract<Segment, { type: 'slice' }>, next: Cont): Cont {
  const { start, end } = seg;
  const step = seg.step === null || seg.step === 0 ? 1 : seg.step;
  return (ctx, v, p, ix) => {
    if (!Array.isArray(v)) return;
    const n = v.length;
    const lo = start === null ? 0 : clamp(start, n);
    const hi = end === null ? n : clamp(end, n);
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

function filterStep(predicate: Expr, next: Cont): Cont {
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

// KubeMod's newScript: a plain step, so it captures nothing; an undefined or failing result drops the value.
function scriptStep(script: Expr, next: Cont): Cont {
  return (ctx, v, _p, ix) => {
    visit(ctx);
    const r = script(ctx, v);
    if (r !== UNDEF && r !== ERR) next(ctx, r, COMPUTED, ix);
  };
}

/** A descent's capture of one node: the captures before it (parent), where the descent began and the node's path. */
interface DescentLink extends IndexLink {
  readonly key: Relative;
}

/**
 * Pre-order over the node and all its descendants; captures the pointer relative to where the descent began. Each
 * node's capture link is built by its caller and holds what its children need (parent, key.from, key.to: its path).
 */
function descentStep(next: Cont): Cont {
  const descend = (ctx: Ctx, v: JsonValue, link: DescentLink, depth: number): void => {
    visit(ctx);
    const p = link.key.to;
    next(ctx, v, p, link);
    const isArray = Array.isArray(v);
    if (!isArray && !isJsonObject(v)) return;
    if (depth >= MAX_DESCENT_DEPTH && (isArray ? v.length : Object.keys(v).length)) {
      throw new JsonPathLimitError(`recursive descent deeper than ${MAX_DESCENT_DEPTH} levels`);
    }
    const ix = link.parent;
    const from = link.key.from;
    if (isArray) {
      for (let j = 0; j < v.length; j++)
        descend(ctx, v[j], { parent: ix, key: { from, to: { parent: p, key: j } } }, depth + 1);
    } else {
      for (const k of Object.keys(v))
        descend(ctx, v[k], { parent: ix, key: { from, to: { parent: p, key: k } } }, depth + 1);
    }
  };
  return (ctx, v, p, ix) => descend(ctx, v, { parent: ix, key: { from: p, to: p } }, 0);
}

/** Compiles a step of an unambiguous path inside an expression: one value in, one value (or UNDEF/ERR) out. */
export function compilePlainStep(seg: Segment, compileExpr: ExprCompiler): (ctx: Ctx, v: JsonValue) => Val {
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
