import { isJsonObject, JsonValue } from '../util/json';
import { UNDEF } from './values';

/*
 * Where a value sits while a select walks: the chain of keys from the root (turned into an RFC6901 pointer only for
 * the values a select yields), what each ambiguous step captured, and child access as KubeMod's gval does it.
 */

export interface PathLink {
  readonly parent: PathLink | null;
  readonly key: string | number;
}
// A descent capture is kept as two path links (where the descent began, where it is) and only turned into a
// pointer string for values that are actually yielded: deep objects would otherwise cost O(depth) per node.
export interface Relative {
  readonly from: PathLink | null;
  readonly to: PathLink | null;
}
export interface IndexLink {
  readonly parent: IndexLink | null;
  readonly key: string | number | Relative;
}
export const hasOwn = Object.prototype.hasOwnProperty;
export const CANONICAL_INDEX = /^(?:0|[1-9][0-9]*)$/;

/** Escapes one RFC6901 reference token. */
export function escapeToken(token: string): string {
  return token.indexOf('~') < 0 && token.indexOf('/') < 0
    ? token
    : token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The path link of a value computed by a script selector: it has no pointer in the object, nor have its members. */
export const COMPUTED: PathLink = { parent: null, key: '' };

// Joins rather than prepends: prepending builds rope strings whose memory grows with depth for every result.
function pointerBetween(to: PathLink | null, from: PathLink | null): string | null {
  const parts: string[] = [];
  for (let l = to; l && l !== from; l = l.parent) {
    if (l === COMPUTED) return null;
    parts.push(typeof l.key === 'number' ? String(l.key) : escapeToken(l.key));
  }
  if (parts.length === 0) return '';
  parts.push('');
  return parts.reverse().join('/');
}

/** The RFC6901 pointer of a path link (null for a computed value). */
export function pointerOf(link: PathLink | null): string | null {
  return pointerBetween(link, null);
}

// A descent starts and ends on the same side of any script (its capture is taken before later steps run).
function relativePointer(rel: Relative): string {
  return pointerBetween(rel.to, rel.from) ?? '';
}

/** What a result captured, outermost first (descent captures as relative pointers). */
export function indicesOf(link: IndexLink | null): Array<number | string> {
  const out: Array<number | string> = [];
  for (let l = link; l; l = l.parent) out.push(typeof l.key === 'object' ? relativePointer(l.key) : l.key);
  return out.reverse();
}

/** A child by name: object member, or array element when the name is a canonical index (gval converts keys). */
export function childByName(v: JsonValue, name: string): JsonValue | typeof UNDEF {
  if (isJsonObject(v)) return hasOwn.call(v, name) ? v[name] : UNDEF;
  if (Array.isArray(v) && CANONICAL_INDEX.test(name)) {
    const i = Number(name);
    return i < v.length ? v[i] : UNDEF;
  }
  return UNDEF;
}

/** The element a (possibly negative) index names, or -1. */
export function arrayIndex(v: JsonValue[], index: number): number {
  const i = index < 0 ? v.length + index : index;
  return i >= 0 && i < v.length ? i : -1;
}
