import { compileJsonPath, CompiledJsonPath, JsonPathSyntaxError } from '../jsonpath';
import { TemplateSyntaxError } from '../template';
import { compileRegex, SafeRegex } from '../util/regex';
import { Interner } from '../util/interner';
import { messageOf } from '../util/errors';

/** Records one problem at a field; count() says how many so far (did this item add any?). */
export type Report = ((field: string, message: string) => void) & { count(): number };

// Selects and regexes are shared by source text across rules and rule versions (they are immutable).
const selects = new Interner<CompiledJsonPath>();
const regexes = new Interner<SafeRegex>();

/** The select compiled (shared by text), or undefined with a problem at the field. */
export function tryJsonPath(source: string, field: string, problem: Report): CompiledJsonPath | undefined {
  try {
    return selects.get(source, () => compileJsonPath(source));
  } catch (err) {
    if (err instanceof JsonPathSyntaxError) {
      problem(field, err.message.startsWith('column') ? err.message : `column ${err.column}: ${err.message}`);
    } else {
      problem(field, `invalid JSONPath: ${messageOf(err)}`);
    }
    return undefined;
  }
}

/** The template compiled, or undefined with a problem at the field. */
export function tryTemplate<T>(compile: () => T, field: string, problem: Report): T | undefined {
  try {
    return compile();
  } catch (err) {
    if (err instanceof TemplateSyntaxError) problem(field, `invalid template: ${err.message}`);
    else problem(field, `invalid template: ${messageOf(err)}`);
    return undefined;
  }
}

/** The RE2 regex compiled (shared by text), or undefined with a problem at the field. */
export function tryRegex(source: string, field: string, problem: Report): SafeRegex | undefined {
  try {
    return regexes.get(source, () => compileRegex(source));
  } catch (err) {
    problem(field, messageOf(err));
    return undefined;
  }
}

// "Did this item add problems?" without threading the list through every helper.
/** How many problems have been reported so far. */
export function countOf(problem: Report): number {
  return problem.count();
}

/** A value as a message shows it (`nothing` when absent). */
export function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  return JSON.stringify(v) ?? String(v);
}

/**
 * Why a patch value that is not a string was read as something else, and how to quote it: `value: y` is the boolean
 * true in YAML 1.1 (kubectl's and KubeMod's reader), `value: 8080` a number; the field wants YAML text.
 */
export function valueNotStringHint(v: unknown): string {
  if (typeof v === 'boolean') {
    const words = v ? 'y, yes, on and true' : 'n, no, off and false';
    return (
      `: YAML 1.1 (as kubectl and KubeMod read it) takes an unquoted ${words} for a boolean; quote the value: ` +
      `value: "${String(v)}" patches in the boolean ${String(v)}, value: '"${v ? 'yes' : 'no'}"' the string "${v ? 'yes' : 'no'}"`
    );
  }
  if (typeof v === 'number')
    return (
      `: an unquoted number is read as a number; quote the value: value: "${v}" patches in the number ${v}, ` +
      `value: '"${v}"' the string "${v}"`
    );
  if (v !== null && typeof v === 'object')
    return ': write the YAML as text, e.g. a block: "value: |-" with the YAML indented on the lines below';
  return '';
}

/**
 * Why matchValue, an item of matchValues or matchRegex is not a string, and how to quote it: `matchValue: yes` is
 * the boolean true in YAML 1.1, `matchValue: 8080` a number; these fields are compared as text.
 */
export function matchNotStringHint(field: 'matchValue' | 'matchValues' | 'matchRegex', v: unknown): string {
  const written = field === 'matchValues' ? '' : `${field}: `;
  if (typeof v === 'boolean') {
    const words = v ? 'y, yes, on and true' : 'n, no, off and false';
    const word = v ? 'yes' : 'no';
    const quoted =
      field === 'matchRegex'
        ? `${written}"${word}"`
        : `${written}"${word}" compares with the text ${word}, ${written}"${String(v)}" with a boolean the select yields`;
    return `: YAML 1.1 (as kubectl and KubeMod read it) takes an unquoted ${words} for a boolean; quote it: ${quoted}`;
  }
  if (typeof v === 'number')
    return (
      `: an unquoted number is read as a number; quote it: ${written}"${v}"` +
      (field === 'matchRegex' ? '' : ' (a number the select yields is compared as text too)')
    );
  return '';
}

/** The message for an unknown field, with the nearest known name when one is close. */
export function unknownField(key: string, known: ReadonlySet<string>): string {
  // The nearest name within two edits (`patchs` is one from patch, two from match).
  let near: string | undefined;
  let best = 3;
  for (const k of known) {
    const d = editDistance(k.toLowerCase(), key.toLowerCase());
    if (d < best) [near, best] = [k, d];
  }
  return `unknown field${near ? ` (did you mean "${near}"?)` : ''}, expected one of: ${[...known].join(', ')}`;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}
