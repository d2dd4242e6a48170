import { JsonValue } from '../util/json';
import { RequestBudget } from '../util/budget';
import { JsonPathNode } from './ast';
import { compileSelect, SelectResult } from './evaluate';
import { parseJsonPath } from './parser';

export type { JsonPathNode, PathNode, Segment, LiteralNode, UnaryNode, BinaryNode, CallNode } from './ast';
export { JsonPathSyntaxError, JsonPathLimitError } from './errors';
export { MAX_SOURCE_LENGTH, MAX_DEPTH, parseJsonPath } from './parser';
export { MAX_VISITS, MAX_RESULTS, MAX_DESCENT_DEPTH, escapeToken } from './evaluate';
export type { SelectResult } from './evaluate';
export { formatGoValue, formatGoFloat } from './goformat';

/** A select parsed and compiled once, evaluated many times. */
export interface CompiledJsonPath {
  readonly source: string;
  readonly ast: JsonPathNode;
  /**
   * Evaluates against an object; undefined results are dropped. May throw JsonPathLimitError on pathological input,
   * and BudgetExhaustedError when the request's budget (if given) runs out.
   */
  select(root: JsonValue, budget?: RequestBudget): SelectResult[];
}

/** Parses and compiles a KubeMod select; throws JsonPathSyntaxError (with column) on bad input. */
export function compileJsonPath(source: string): CompiledJsonPath {
  const ast = parseJsonPath(source);
  const select = compileSelect(ast);
  return { source, ast, select };
}
