import { ResultTooLongError } from '../../util/regex';
import { FunctionError } from '../errors';
import { def, FuncContext, FuncDef } from '../registry';
import { GoValue } from '../values';
import { num } from './convert';

const s = (v: GoValue): string => v as string;
const SEP = '\u{F8FF0}';

// Each match costs an exec() through node-re2 (~1.5 µs): charged per match, so a render over a large input stops at
// its step limit (or the request's budget) as it goes. (Matching is linear: see util/regex.ts.)
const MATCH_STEPS = 16;
const matchCost = (ctx: FuncContext) => (): void => ctx.charge(MATCH_STEPS);

// The result is bounded as it is built (each match's expansion measured before it is added).
function replaceAll(ctx: FuncContext, pattern: string, input: string, repl: string): string {
  try {
    return ctx.regex(pattern).replaceAll(input, repl, matchCost(ctx), ctx.maxString);
  } catch (e) {
    if (e instanceof ResultTooLongError) {
      throw new FunctionError(`regexReplaceAll result longer than ${ctx.maxString} bytes`);
    }
    throw e;
  }
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
    const marked = ctx.regex(s(re)).replaceAll(str.split(SEP).join(''), `${SEP}\${0}${SEP}`, matchCost(ctx));
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
