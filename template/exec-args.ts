import { ArgNode } from './ast';
import { KIND_GO_TYPE, ParamKind } from './registry';
import { GoValue, goTypeName, isMap, mapGet } from './values';

/* Go's text/template rules for arguments: constants, field chains on maps and parameter types. */

/** No value piped into a command (the first command of a pipeline). */
export const NO_FINAL = Symbol('no final');
/** The value piped into a command, or NO_FINAL. */
export type Final = GoValue | typeof NO_FINAL;

/** Thrown inside an action; the enclosing command adds where it happened. */
export class ExecFail extends Error {}

/** Parameter kinds a missing value or nil converts to nil for. */
export const NILABLE: ReadonlySet<ParamKind> = new Set(['any', 'list', 'dict']);

/** A kind as Go's evalArg names it in "expected integer; found 1.5". */
export const expectedName = (kind: ParamKind): string =>
  kind === 'int' ? 'integer' : kind === 'float' ? 'float' : KIND_GO_TYPE[kind];

/** Go's "can't give argument to non-function". */
export function notAFunction(args: readonly ArgNode[], final: Final, name: string): void {
  if (args.length > 1 || final !== NO_FINAL)
    throw new ExecFail(`can't give argument to non-function ${name}`);
}

/** A number constant where any type is accepted, as Go's idealConstant. */
export function idealConstant(n: Extract<ArgNode, { type: 'number' }>): GoValue {
  if (n.floatTyped && n.isFloat) return n.float;
  if (n.isInt) return n.int;
  throw new ExecFail(`${n.text} overflows int`);
}

/** Field chains on maps: a missing key is Go's "no value"; stepping through nil is an error. */
export function evalFieldChain(
  receiver: GoValue,
  ident: readonly string[],
  args: readonly ArgNode[],
  final: Final,
): GoValue {
  let cur = receiver;
  const hasArgs = args.length > 1 || final !== NO_FINAL;
  for (let i = 0; i < ident.length; i++) {
    const name = ident[i];
    if (cur === undefined) return undefined;
    if (cur === null) throw new ExecFail(`nil pointer evaluating interface {}.${name}`);
    if (!isMap(cur)) throw new ExecFail(`can't evaluate field ${name} in type ${goTypeName(cur)}`);
    if (i === ident.length - 1 && hasArgs) throw new ExecFail(`${name} is not a method but has arguments`);
    cur = mapGet(cur, name);
  }
  return cur;
}

/** Go's validateType: a missing value becomes nil where nil is allowed; otherwise types must match exactly. */
export function validateArg(v: GoValue, kind: ParamKind): GoValue {
  if (v === undefined) {
    if (NILABLE.has(kind)) return null;
    throw new ExecFail(`invalid value; expected ${KIND_GO_TYPE[kind]}`);
  }
  let ok: boolean;
  switch (kind) {
    case 'any':
      return v;
    case 'string':
      ok = typeof v === 'string';
      break;
    case 'int':
      ok = typeof v === 'bigint';
      break;
    case 'float':
      ok = typeof v === 'number';
      break;
    case 'bool':
      ok = typeof v === 'boolean';
      break;
    case 'list':
      ok = Array.isArray(v);
      break;
    case 'dict':
      ok = isMap(v);
      break;
  }
  if (!ok) {
    throw new ExecFail(
      `wrong type for value; expected ${KIND_GO_TYPE[kind]}; got ${v === null ? 'interface {}' : goTypeName(v)}`,
    );
  }
  return v;
}
