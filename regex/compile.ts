import RE2 from 're2';

/** A compiled regular expression that runs in linear time (RE2: no backtracking, no lookaround). */
export interface SafeRegex {
  readonly source: string;
  /** Unanchored search, as Go's regexp.MatchString. */
  test(input: string): boolean;
  /**
   * Go's ReplaceAllString, with ${1} / $1 / ${name} references in the replacement. `onMatch` is called with each
   * match's offset (to charge the work: it may throw to stop).
   */
  replaceAll(input: string, replacement: string, onMatch?: MatchHook): string;
  /** All matches, each with its submatches (index 0 is the whole match); `onMatch` as for replaceAll. */
  findAll(input: string, limit?: number, onMatch?: MatchHook): string[][];
}

/** Called per match with its UTF-16 offset. */
export type MatchHook = (offset: number) => void;

/** Thrown for a pattern RE2 cannot compile; message says what is wrong. */
export class RegexSyntaxError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`invalid regex: ${reason}`);
  }
}

// Patterns come from tenants' ModRules; cap their size so one rule cannot make compile or match costly.
const MAX_PATTERN_LENGTH = 4096;

/** Compiles a Go/RE2 pattern (e.g. `(?i)nginx:1\.14\..*`) once; throws RegexSyntaxError. */
export function compileRegex(pattern: string): SafeRegex {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new RegexSyntaxError(pattern, `pattern longer than ${MAX_PATTERN_LENGTH} characters`);
  }
  let re: RE2;
  let global: RE2;
  try {
    re = new RE2(pattern, 'u');
    global = new RE2(pattern, 'gu');
  } catch (err) {
    throw new RegexSyntaxError(pattern, String((err as Error).message));
  }
  return {
    source: pattern,
    test: (input) => re.test(input),
    // Go's expansion syntax ($1, ${1}, ${name}) differs from JS ($1, $<name>): translate once per call.
    replaceAll: (input, replacement, onMatch) =>
      input.replace(global, (...m: unknown[]) => {
        onMatch?.(m[m.length - (typeof m[m.length - 1] === 'object' ? 3 : 2)] as number);
        return expandGo(replacement, m as (string | number | object)[]);
      }),
    findAll: (input, limit = -1, onMatch) => {
      const out: string[][] = [];
      global.lastIndex = 0;
      let m: RegExpExecArray | null;
      while ((limit < 0 || out.length < limit) && (m = global.exec(input)) !== null) {
        onMatch?.(m.index);
        out.push(Array.from(m, (s) => s ?? ''));
        if (m[0] === '') global.lastIndex++;
      }
      return out;
    },
  };
}

// Expands Go regexp template references against a String.prototype.replace callback's arguments.
function expandGo(template: string, args: (string | number | object)[]): string {
  const last = args[args.length - 1];
  const named = typeof last === 'object' && last !== null ? (last as Record<string, string | undefined>) : {};
  const groupCount = args.length - (typeof last === 'object' ? 3 : 2);
  const group = (name: string): string => {
    if (/^\d+$/.test(name)) {
      const i = Number(name);
      return i < groupCount ? String(args[i] ?? '') : '';
    }
    return named[name] ?? '';
  };
  return template.replace(
    /\$(\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g,
    (_all, whole: string, braced?: string, bare?: string) => {
      if (whole === '$') return '$';
      return group((braced ?? bare) as string);
    },
  );
}
