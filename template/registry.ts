import { SafeRegex } from '../util/regex';
import { GoValue } from './values';

/** How an argument is converted before a call, mirroring the Go parameter type. */
export type ParamKind = 'any' | 'string' | 'int' | 'float' | 'bool' | 'list' | 'dict';

/** What a function may use from the evaluator: work accounting and cached regexes. */
export interface FuncContext {
  /** Adds n units of work to the template's step budget; throws past the limit. */
  charge(n: number): void;
  /** Compiles (or reuses) an RE2 pattern; throws FunctionError on bad syntax. */
  regex(pattern: string): SafeRegex;
  /** Largest string a function may produce. */
  readonly maxString: number;
}

/** A template function with its Go signature. */
export interface FuncDef {
  params: readonly ParamKind[];
  variadic?: ParamKind;
  fn: (ctx: FuncContext, ...args: GoValue[]) => GoValue;
}

/** Shorthand for declaring a function. */
export function def(
  params: readonly ParamKind[],
  fn: (ctx: FuncContext, ...args: GoValue[]) => GoValue,
  variadic?: ParamKind,
): FuncDef {
  return { params, fn, variadic };
}

/** Go type names of parameter kinds, for error messages. */
export const KIND_GO_TYPE: Record<ParamKind, string> = {
  any: 'interface {}',
  string: 'string',
  int: 'int',
  float: 'float64',
  bool: 'bool',
  list: '[]interface {}',
  dict: 'map[string]interface {}',
};
