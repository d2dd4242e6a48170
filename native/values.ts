import { JsonValue } from '../util/json';
import { formatGoFloat } from '../jsonpath';
import { parseGoFloat } from '../jsonpath/goformat';
import { celNumber, celString, or } from './cel';

/*
 * KubeMod compares values as text: a select result printed with Go's %v against matchValue(s), or tested with
 * matchRegex. Equality needs no printing: the values whose %v text is m are few (the string m, the number that
 * prints as m, true/false, null as <nil>), and CEL compares across types (1 == 1.0, "1" == 1 is false).
 */

/** Thrown when a comparison has no exact CEL form; the message says why (it becomes a "does not fit" reason). */
export class NoCelForm extends Error {}

/** CEL: Go's %v of the value equals `text` (the value in CEL expression `v`, any JSON type). */
export function celGoTextEquals(v: string, text: string): string {
  if (text.startsWith('[') || text.startsWith('map[')) {
    throw new NoCelForm(
      `${JSON.stringify(text)} looks like a Go-printed list or map; CEL has no printing to compare with`,
    );
  }
  // dyn(): CEL infers a comprehension variable's type from its first comparison; the value may be of any type.
  v = `dyn(${v})`;
  const parts = [`${v} == ${celString(text)}`];
  const n = Number(text);
  if (text.trim() !== '' && Number.isFinite(n) && formatGoFloat(n) === text) {
    try {
      parts.push(`${v} == ${celNumber(n)}`);
    } catch {
      throw new NoCelForm(`${JSON.stringify(text)} is a number beyond CEL's exact range`);
    }
  }
  if (text === 'true' || text === 'false') parts.push(`${v} == ${text}`);
  if (text === '<nil>') parts.push(`${v} == null`);
  return or(parts);
}

/** What celGoTextEquals computes, as KubeMod does it (for the generator's expectations and tests). */
export function goTextEquals(value: JsonValue, text: string): boolean {
  if (typeof value === 'string') return value === text;
  if (typeof value === 'number') return formatGoFloat(value) === text;
  if (typeof value === 'boolean') return String(value) === text;
  if (value === null) return text === '<nil>';
  return false;
}

/**
 * CEL for the engine's `==` between a value and a literal (looseEquals: same-type compare, then numbers, then
 * booleans, then deep equality), when both sides are defined. Literal strings that read as numbers or booleans
 * convert in ways CEL cannot follow exactly: those do not compile. Returns the CEL and whether a string value must
 * be excluded by a guard (a number literal against a string: Go's ParseFloat has no exact CEL twin).
 */
export function celLooseEquals(v: string, literal: JsonValue): { cel: string; excludeStrings: boolean } {
  v = `dyn(${v})`;
  if (literal === null) return { cel: `${v} == null`, excludeStrings: false };
  if (typeof literal === 'boolean') {
    const words = literal ? `${v} == "true" || ${v} == "TRUE"` : `${v} == "false" || ${v} == "FALSE"`;
    return {
      cel: or([
        `${v} == ${literal}`,
        `((type(${v}) == int || type(${v}) == double) && (${v} != 0) == ${literal})`,
        `(type(${v}) == string && (${words}))`,
      ]),
      excludeStrings: false,
    };
  }
  if (typeof literal === 'number') {
    return {
      cel: or([`${v} == ${celNumber(literal)}`, `(type(${v}) == bool && ${v} == ${literal !== 0})`]),
      excludeStrings: true,
    };
  }
  if (typeof literal === 'string') {
    if (parseGoFloat(literal) !== undefined || /^(true|false|TRUE|FALSE)$/.test(literal)) {
      throw new NoCelForm(
        `comparison with ${JSON.stringify(literal)}, which KubeMod converts to a number or boolean`,
      );
    }
    return { cel: `${v} == ${celString(literal)}`, excludeStrings: false };
  }
  throw new NoCelForm('comparison with a list or map literal');
}

/** CEL: KubeMod's length() of an optional value is defined (null, absent, string, list or map). */
export function celLengthDefined(opt: string): string {
  const v = `dyn(${opt}.value())`;
  return or([
    `!${opt}.hasValue()`,
    `${v} == null`,
    `type(${v}) == string`,
    `type(${v}) == list`,
    `type(${v}) == map`,
  ]);
}

/** CEL: KubeMod's length() (UTF-8 bytes for strings, 0 for null or absent); only where celLengthDefined holds. */
export function celLength(opt: string): string {
  const v = `dyn(${opt}.value())`;
  return `(!${opt}.hasValue() || ${v} == null ? 0 : (type(${v}) == string ? size(bytes(${v})) : size(${v})))`;
}
