import { FunctionError } from '../errors';
import { def, FuncContext, FuncDef } from '../registry';
import { GoValue } from '../values';
import { num } from './convert';

const s = (v: GoValue): string => v as string;
const SEP = '\u{F8FF0}';

// node-re2 converts offsets from the start of the input for every match found through a callback or lastIndex,
// so the work grows with the square of the input (50,000 matches in 100 kB: ~3 s). Each match is charged for its
// offset: a render stops at its step limit (or the request's budget) instead of running for minutes.
const matchCost =
  (ctx: FuncContext) =>
  (offset: number): void =>
    ctx.charge(1 + (offset >> 7));

// Bounds the result before building it: every match may expand to the replacement plus referenced groups.
function replaceAll(ctx: FuncContext, pattern: string, input: string, repl: string): string {
  const re = ctx.regex(pattern);
  const refs = (repl.match(/\$/g) ?? []).length;
  const perMatch = repl.length + refs * input.length;
  if ((input.length + 1) * perMatch + input.length > ctx.maxString) {
    const matches = re.findAll(input, -1, matchCost(ctx)).length;
    if (matches * perMatch + input.length > ctx.maxString) {
      throw new FunctionError(`regexReplaceAll result longer than ${ctx.maxString} bytes`);
    }
  }
  return re.replaceAll(input, repl, matchCost(ctx));
}

/** Sprig's regex functions, all on RE2 with Go syntax. */
export const REGEX_FUNCTIONS: Record<string, FuncDef> = {
  regexMatch: def(['string', 'string'], (ctx, re, v) => {
    try {
      return ctx.regex(s(re)).test(s(v));
    } catch (e) {
      // Sprig's regexMatch ignores a bad pattern and reports no match.
      if (e instanceof FunctionError) return false;
      throw e;
    }
  }),
  regexFind: def(['string', 'string'], (ctx, re, v) => ctx.regex(s(re)).findAll(s(v), 1)[0]?.[0] ?? ''),
  regexFindAll: def(['string', 'string', 'int'], (ctx, re, v, n) => {
    const limit = num(n);
    if (limit === 0) return [];
    const out = ctx
      .regex(s(re))
      .findAll(s(v), limit < 0 ? -1 : limit, matchCost(ctx))
      .map((m) => m[0]);
    ctx.charge(out.length);
    return out;
  }),
  regexReplaceAll: def(['string', 'string', 'string'], (ctx, re, v, repl) =>
    replaceAll(ctx, s(re), s(v), s(repl)),
  ),
  regexReplaceAllLiteral: def(['string', 'string', 'string'], (ctx, re, v, repl) =>
    replaceAll(ctx, s(re), s(v), s(repl).replace(/\$/g, '$$$$')),
  ),
  regexSplit: def(['string', 'string', 'int'], (ctx, re, v, n) => {
    const limit = num(n);
    const str = s(v);
    if (limit === 0) return [];
    if (s(re) !== '' && str === '') return [''];
    // Mark each match with a private-use separator, then cut: parts alternate text, match, text, ...
    const marked = ctx.regex(s(re)).replaceAll(str.split(SEP).join(''), `${SEP}\${0}${SEP}`);
    const parts = marked.split(SEP);
    const out: string[] = [];
    let acc = parts[0];
    for (let i = 1; i + 1 < parts.length; i += 2) {
      if (limit > 0 && out.length === limit - 1) {
        acc += parts.slice(i).join('');
        break;
      }
      out.push(acc);
      acc = parts[i + 1];
    }
    out.push(acc);
    ctx.charge(out.length);
    return out;
  }),
  regexQuoteMeta: def(['string'], (_c, v) => s(v).replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')),
};
