import type { JsonValue } from '../util/json';
import { PatchError } from './operation';

/** Decodes an RFC 6901 JSON pointer into its reference tokens: '/a/b~1c' -> ['a', 'b/c']; '' -> []. */
export function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (path[0] !== '/')
    throw new PatchError(`invalid JSON pointer "${path}": must be empty or start with "/"`, path);
  const raw = path.slice(1).split('/');
  const tokens = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const t = raw[i];
    if (t.indexOf('~') === -1) {
      tokens[i] = t;
      continue;
    }
    if (/~(?![01])/.test(t)) {
      throw new PatchError(`invalid JSON pointer "${path}": "~" must be followed by "0" or "1"`, path);
    }
    // ~1 first, then ~0, so that "~01" decodes to "~1" and not "/".
    tokens[i] = t.replace(/~1/g, '/').replace(/~0/g, '~');
  }
  return tokens;
}

/** Encodes reference tokens as an RFC 6901 JSON pointer: ['a', 'b/c'] -> '/a/b~1c'; [] -> ''. */
export function formatPointer(tokens: readonly string[]): string {
  let out = '';
  for (const t of tokens) out += '/' + escapeToken(t);
  return out;
}

/** Escapes one reference token ('~' -> '~0', '/' -> '~1'). */
export function escapeToken(token: string): string {
  if (token.indexOf('~') === -1 && token.indexOf('/') === -1) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The value at the tokens' location, or undefined when there is none (a list index as decimal digits). */
export function valueAt(root: JsonValue, tokens: readonly string[]): JsonValue | undefined {
  let v: JsonValue | undefined = root;
  for (const t of tokens) {
    if (Array.isArray(v)) v = /^(?:0|[1-9]\d*)$/.test(t) ? v[Number(t)] : undefined;
    else if (v !== null && typeof v === 'object') v = Object.hasOwn(v, t) ? v[t] : undefined;
    else return undefined;
    if (v === undefined) return undefined;
  }
  return v;
}
