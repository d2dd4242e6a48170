import { isJsonObject, JsonValue } from '../util/json';
import { JsonPathNode, Segment } from './ast';
import { JsonPathLimitError } from './errors';
import { ERR, toBool, toText, UNDEF, Val } from './values';
import { Cont, Ctx, Expr, MAX_DESCENT_DEPTH, visit } from './eval-context';
import { arrayIndex, CANONICAL_INDEX, childByName, COMPUTED, hasOwn, IndexLink, PathLink } from './pointers';

/** Compiles an expression node; passed in, as expressions hold paths and paths hold expressions (filters, keys). */
export type ExprCompiler = (node: JsonPathNode) => Expr;

// Builds the continuation chain for segments[i..]: each step hands every value it yields to the next.
export function compileSegments(segments: readonly Segment[], i: number, compileExpr: ExprCompiler): Cont {
  if (i === segments.length) return (ctx, v, p, ix) => ctx.sink(v, p, ix);
  const seg = segments[i];
  const next = compileSegments(segments, i + 1, compileExpr);
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
