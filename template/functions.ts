import { BUILTIN_FUNCTIONS } from './builtins';
import { FunctionError } from './errors';
import { IMAGE_FUNCTIONS } from './images';
import { def, FuncDef } from './registry';
import { DICT_FUNCTIONS } from './sprig/dicts';
import { ENCODING_FUNCTIONS } from './sprig/encoding';
import { LIST_FUNCTIONS } from './sprig/lists';
import { MATH_FUNCTIONS } from './sprig/math';
import { PATH_FUNCTIONS } from './sprig/paths';
import { REGEX_FUNCTIONS } from './sprig/regex';
import { STRING_FUNCTIONS } from './sprig/strings';
import { isEmpty, strval } from './sprig/convert';
import { deepEqual, goKindName, goTypeName } from './values';

const DEFAULTS_AND_TYPES: Record<string, FuncDef> = {
  default: def(['any'], (_c, d, ...given) => (given.length === 0 || isEmpty(given[0]) ? d : given[0]), 'any'),
  empty: def(['any'], (_c, v) => isEmpty(v)),
  coalesce: def([], (_c, ...vs) => vs.find((v) => !isEmpty(v)) ?? null, 'any'),
  ternary: def(['any', 'any', 'bool'], (_c, t, f, cond) => (cond ? t : f)),
  all: def([], (_c, ...vs) => vs.every((v) => !isEmpty(v)), 'any'),
  any: def([], (_c, ...vs) => vs.some((v) => !isEmpty(v)), 'any'),
  typeOf: def(['any'], (_c, v) => goTypeName(v)),
  typeIs: def(['string', 'any'], (_c, t, v) => t === goTypeName(v)),
  kindOf: def(['any'], (_c, v) => goKindName(v)),
  kindIs: def(['string', 'any'], (_c, t, v) => t === goKindName(v)),
  deepEqual: def(['any', 'any'], (ctx, a, b) => deepEqual(a, b, (n) => ctx.charge(n))),
  fail: def(['string'], (_c, msg) => {
    throw new FunctionError(strval(msg));
  }),
};

/**
 * Every function a template may call: Go's builtins overlaid with Sprig's (Sprig's `slice` wins, as in Go), and
 * modrule's image functions.
 */
export const FUNCTIONS: ReadonlyMap<string, FuncDef> = new Map(
  Object.entries({
    ...BUILTIN_FUNCTIONS,
    ...STRING_FUNCTIONS,
    ...LIST_FUNCTIONS,
    ...DICT_FUNCTIONS,
    ...MATH_FUNCTIONS,
    ...REGEX_FUNCTIONS,
    ...ENCODING_FUNCTIONS,
    ...PATH_FUNCTIONS,
    ...DEFAULTS_AND_TYPES,
    ...IMAGE_FUNCTIONS,
  }),
);

/** The names of all template functions, sorted. */
export const TEMPLATE_FUNCTIONS: readonly string[] = Object.freeze([...FUNCTIONS.keys()].sort());

export { FunctionError };
