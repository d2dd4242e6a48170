import { JsonValue } from '../util/json';
import { BUDGET_CHECK_STEPS, RequestBudget } from '../util/budget';
import { JsonPathLimitError } from './errors';
import { formatGoValue } from './goformat';
import type { Val } from './values';
import type { IndexLink, PathLink } from './pointers';

/** Node visits one select() may make before it gives up (guards `$..*..*`-style selects on huge objects). */
export const MAX_VISITS = 1_000_000;
/** Most results one select() may yield. */
export const MAX_RESULTS = 10_000;
/** Deepest level a recursive descent (`..`) walks into. */
export const MAX_DESCENT_DEPTH = 512;

/** Where a path's values go. */
export type Sink = (value: JsonValue, path: PathLink | null, indices: IndexLink | null) => void;
/** The state of one evaluation: its root, the visit meter and where results go. */
export interface Ctx {
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
/** A compiled expression: its value at the current node. */
export type Expr = (ctx: Ctx, current: JsonValue) => Val;
/** A compiled step: hands every value it yields to the rest of the path. */
export type Cont = (ctx: Ctx, value: JsonValue, path: PathLink | null, indices: IndexLink | null) => void;

/** The sink of a top-level expression (its paths collect their values themselves). */
export const noopSink: Sink = () => undefined;

/** Counts one node visit (and checks the limits every so often). */
export function visit(ctx: Ctx): void {
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

/** A fresh evaluation of one select. */
export function newCtx(root: JsonValue, budget: RequestBudget | undefined, sink: Sink): Ctx {
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
export function settle(ctx: Ctx): void {
  if (!ctx.budget) return;
  const total = ctx.visits + ctx.extra;
  const n = Math.max(total - ctx.charged, 1);
  ctx.charged = total;
  ctx.budget.charge(n);
}

// A regex test costs as much as a dozen visits and more for long inputs: charged in proportion, and brought forward
// to the next visit's checkpoint, so the deadline is read at most every BUDGET_CHECK_STEPS steps of work.
export function spend(ctx: Ctx, n: number): void {
  if (!ctx.budget) return;
  ctx.extra += n;
  ctx.checkAt -= n;
}

/**
 * Work that is not a node visit (building a result's pointer, formatting a value), charged at once: the budget is
 * looked at within BUDGET_CHECK_STEPS steps of work, not at the next visit.
 */
export function work(ctx: Ctx, n: number): void {
  if (!ctx.budget) return;
  ctx.extra += n;
  ctx.checkAt -= n;
  if (ctx.visits > ctx.checkAt) checkpoint(ctx);
}

/** A value as Go's `%v` prints it (strings unchanged); a map or list paid for as it is formatted. */
export function textIn(ctx: Ctx, v: JsonValue): string {
  if (typeof v === 'string') return v;
  return formatGoValue(
    v,
    ctx.budget && typeof v === 'object' && v !== null ? (n) => work(ctx, n) : undefined,
  );
}
