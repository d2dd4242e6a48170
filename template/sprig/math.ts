import { FunctionError } from '../errors';
import { def, FuncDef } from '../registry';
import { GoValue } from '../values';
import { int64, num, toFloat64, toInt64 } from './convert';

function intDiv(a: bigint, b: bigint, op: 'div' | 'mod'): bigint {
  if (b === 0n) throw new FunctionError('runtime error: integer divide by zero');
  return int64(op === 'div' ? a / b : a % b);
}

// Sprig's round: round half away from zero at `places` decimals, with a configurable threshold.
function round(a: GoValue, places: number, roundOn: number): number {
  const pow = Math.pow(10, places);
  const digit = pow * toFloat64(a);
  const frac = digit - Math.trunc(digit);
  return (frac >= roundOn ? Math.ceil(digit) : Math.floor(digit)) / pow;
}

/** Sprig's integer and float math functions. */
export const MATH_FUNCTIONS: Record<string, FuncDef> = {
  add: def([], (_c, ...vs) => vs.reduce<bigint>((acc, v) => int64(acc + toInt64(v)), 0n), 'any'),
  add1: def(['any'], (_c, v) => int64(toInt64(v) + 1n)),
  sub: def(['any', 'any'], (_c, a, b) => int64(toInt64(a) - toInt64(b))),
  mul: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<bigint>((acc, v) => int64(acc * toInt64(v)), toInt64(a)),
    'any',
  ),
  div: def(['any', 'any'], (_c, a, b) => intDiv(toInt64(a), toInt64(b), 'div')),
  mod: def(['any', 'any'], (_c, a, b) => intDiv(toInt64(a), toInt64(b), 'mod')),
  max: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<bigint>((m, v) => (toInt64(v) > m ? toInt64(v) : m), toInt64(a)),
    'any',
  ),
  biggest: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<bigint>((m, v) => (toInt64(v) > m ? toInt64(v) : m), toInt64(a)),
    'any',
  ),
  min: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<bigint>((m, v) => (toInt64(v) < m ? toInt64(v) : m), toInt64(a)),
    'any',
  ),
  addf: def([], (_c, ...vs) => vs.reduce<number>((acc, v) => acc + toFloat64(v), 0), 'any'),
  add1f: def(['any'], (_c, v) => toFloat64(v) + 1),
  subf: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<number>((acc, v) => acc - toFloat64(v), toFloat64(a)),
    'any',
  ),
  mulf: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<number>((acc, v) => acc * toFloat64(v), toFloat64(a)),
    'any',
  ),
  divf: def(
    ['any'],
    (_c, a, ...vs) => vs.reduce<number>((acc, v) => acc / toFloat64(v), toFloat64(a)),
    'any',
  ),
  maxf: def(['any'], (_c, a, ...vs) => Math.max(toFloat64(a), ...vs.map(toFloat64)), 'any'),
  minf: def(['any'], (_c, a, ...vs) => Math.min(toFloat64(a), ...vs.map(toFloat64)), 'any'),
  floor: def(['any'], (_c, v) => Math.floor(toFloat64(v))),
  ceil: def(['any'], (_c, v) => Math.ceil(toFloat64(v))),
  round: def(
    ['any', 'int'],
    (_c, a, p, ...opt) => round(a, num(p), opt.length ? toFloat64(opt[0]) : 0.5),
    'float',
  ),
  int: def(['any'], (_c, v) => toInt64(v)),
  int64: def(['any'], (_c, v) => toInt64(v)),
  float64: def(['any'], (_c, v) => toFloat64(v)),
  atoi: def(['string'], (_c, v) => {
    const m = /^[+-]?\d+$/.exec(v as string);
    if (!m) return 0n;
    const n = BigInt(m[0]);
    return n >= -(2n ** 63n) && n < 2n ** 63n ? n : 0n;
  }),
};
