import type { CompiledJsonPath } from '../jsonpath';
import type { SafeRegex } from '../util/regex';
import { isJsonObject, JsonValue } from '../util/json';
import { Interner } from '../util/interner';
import type { MatchFor, MatchItem } from './types';
import { CompiledMatchItem, VALUE_SET_FROM } from './compiled';
import {
  countOf,
  describe,
  matchNotStringHint,
  Report,
  tryJsonPath,
  tryRegex,
  unknownField,
} from './field-checks';

const MATCH_FIELDS = new Set(['select', 'matchValue', 'matchValues', 'matchRegex', 'matchFor', 'negate']);

const items = new Interner<MatchItemImpl>();

// Interned items carry a number so that lists of them (and rule bodies) are keyed by a short string.
let nextItemId = 0;
class MatchItemImpl implements CompiledMatchItem {
  readonly id = nextItemId++;
  readonly valueSet?: ReadonlySet<string>;
  constructor(
    readonly select: CompiledJsonPath,
    readonly matchValue: string | undefined,
    readonly matchValues: readonly string[] | undefined,
    readonly matchRegex: SafeRegex | undefined,
    readonly matchFor: MatchFor,
    readonly negate: boolean,
  ) {
    if (matchValues && matchValues.length >= VALUE_SET_FROM) this.valueSet = new Set(matchValues);
  }
}

/** One item of spec.match compiled and interned (with its interning key), or undefined with its problems reported. */
export function compileMatchItem(
  item: unknown,
  at: string,
  problem: Report,
): { item: MatchItemImpl; key: string } | undefined {
  if (!isJsonObject(item)) {
    problem(at, 'must be an object with a select');
    return undefined;
  }
  const before = countOf(problem);
  for (const key of Object.keys(item)) {
    if (!MATCH_FIELDS.has(key)) problem(`${at}.${key}`, unknownField(key, MATCH_FIELDS));
  }
  const m = item as Partial<Record<keyof MatchItem, JsonValue>>;
  let select: CompiledJsonPath | undefined;
  if (typeof m.select !== 'string' || m.select.trim() === '')
    problem(`${at}.select`, 'required: a JSONPath expression');
  else select = tryJsonPath(m.select, `${at}.select`, problem);

  let matchValue: string | undefined;
  if (m.matchValue !== undefined && m.matchValue !== null) {
    if (typeof m.matchValue !== 'string')
      problem(
        `${at}.matchValue`,
        `must be a string, got ${describe(m.matchValue)}${matchNotStringHint('matchValue', m.matchValue)}`,
      );
    else matchValue = m.matchValue;
  }
  let matchValues: string[] | undefined;
  if (m.matchValues !== undefined && m.matchValues !== null) {
    if (!Array.isArray(m.matchValues)) {
      problem(`${at}.matchValues`, 'must be a list of strings');
    } else {
      m.matchValues.forEach((v, j) => {
        if (typeof v !== 'string')
          problem(
            `${at}.matchValues[${j}]`,
            `must be a string, got ${describe(v)}${matchNotStringHint('matchValues', v)}`,
          );
      });
      // KubeMod ignores an empty matchValues list.
      if (m.matchValues.length > 0) matchValues = m.matchValues as string[];
    }
  }
  let matchRegex: SafeRegex | undefined;
  if (m.matchRegex !== undefined && m.matchRegex !== null) {
    if (typeof m.matchRegex !== 'string')
      problem(
        `${at}.matchRegex`,
        `must be a string, got ${describe(m.matchRegex)}${matchNotStringHint('matchRegex', m.matchRegex)}`,
      );
    else matchRegex = tryRegex(m.matchRegex, `${at}.matchRegex`, problem);
  }
  let matchFor: MatchFor = 'Any';
  if (m.matchFor !== undefined && m.matchFor !== null && m.matchFor !== '') {
    if (m.matchFor !== 'Any' && m.matchFor !== 'All') {
      problem(`${at}.matchFor`, `must be Any or All, got ${describe(m.matchFor)}`);
    } else {
      matchFor = m.matchFor;
    }
  }
  let negate = false;
  if (m.negate !== undefined && m.negate !== null) {
    if (typeof m.negate !== 'boolean')
      problem(`${at}.negate`, `must be true or false, got ${describe(m.negate)}`);
    else negate = m.negate;
  }
  if (countOf(problem) !== before || !select) return undefined;
  // Whole items are shared: `$.kind == Deployment` in every rule is one item, matched once per object version.
  const key = JSON.stringify([select.source, matchValue, matchValues, matchRegex?.source, matchFor, negate]);
  const shared = items.get(
    key,
    () => new MatchItemImpl(select, matchValue, matchValues, matchRegex, matchFor, negate),
  );
  return { item: shared, key: String(shared.id) };
}
