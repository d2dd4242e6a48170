import type { JsonValue } from '../util/json';
import { SafeRegex } from '../util/regex';
import type { Decline } from '../native';

/**
 * The few CEL forms the scope writes, as data: rendered to CEL for the API server, evaluated here for tests and
 * `modrule scope`. Every form but one reads only `request.operation`, `request.resource` and `request.namespace`,
 * which every admission request has, so it cannot fail to evaluate (an error would skip the call: the webhook's
 * failurePolicy is Ignore). The one that reads the object, a native rule's decline, is built to never fail either
 * (native/decline.ts) and is only ever reached for CREATE and UPDATE requests, which carry one.
 */
export type Condition =
  | { readonly t: 'const'; readonly value: boolean }
  /** `OPERATION:resource` of the request is one of these. */
  | { readonly t: 'keyIn'; readonly keys: readonly string[] }
  | { readonly t: 'opIn'; readonly ops: readonly string[] }
  /** The request is for a cluster-scoped object: no namespace, or a Namespace (the engine's view). */
  | { readonly t: 'cluster' }
  | { readonly t: 'nsIn'; readonly names: readonly string[] }
  | { readonly t: 'nsMatches'; readonly regex: SafeRegex }
  | { readonly t: 'nsBelow'; readonly bound: string }
  | { readonly t: 'nsAtLeast'; readonly bound: string }
  /** A rule served natively needs the webhook for this object: one of its guards declines it. */
  | { readonly t: 'object'; readonly decline: Decline }
  | { readonly t: 'not'; readonly x: Condition }
  | { readonly t: 'and'; readonly xs: readonly Condition[] }
  | { readonly t: 'or'; readonly xs: readonly Condition[] }
  | { readonly t: 'if'; readonly test: Condition; readonly then: Condition; readonly else: Condition };

/** What a condition reads from a request. */
export interface ConditionInput {
  operation: string;
  group: string;
  resource: string;
  namespace: string;
  /** The request's object; absent: unknown, and a condition on it counts as true (the call may be made). */
  object?: JsonValue;
}

export const TRUE: Condition = { t: 'const', value: true };
export const FALSE: Condition = { t: 'const', value: false };

/** a || b ..., folding constants. */
export function or(...xs: Condition[]): Condition {
  const parts: Condition[] = [];
  for (const x of xs) {
    if (x.t === 'const') {
      if (x.value) return TRUE;
      continue;
    }
    parts.push(...(x.t === 'or' ? x.xs : [x]));
  }
  return parts.length === 0 ? FALSE : parts.length === 1 ? parts[0] : { t: 'or', xs: parts };
}

/** a && b ..., folding constants. */
export function and(...xs: Condition[]): Condition {
  const parts: Condition[] = [];
  for (const x of xs) {
    if (x.t === 'const') {
      if (!x.value) return FALSE;
      continue;
    }
    parts.push(...(x.t === 'and' ? x.xs : [x]));
  }
  return parts.length === 0 ? TRUE : parts.length === 1 ? parts[0] : { t: 'and', xs: parts };
}

/** !x, folding constants. */
export function not(x: Condition): Condition {
  if (x.t === 'const') return x.value ? FALSE : TRUE;
  return x.t === 'not' ? x.x : { t: 'not', x };
}

/** test ? then : else, folding what is constant. */
export function choose(test: Condition, then: Condition, otherwise: Condition): Condition {
  if (test.t === 'const') return test.value ? then : otherwise;
  if (then.t === 'const' && otherwise.t === 'const')
    return then.value === otherwise.value ? then : then.value ? test : not(test);
  return { t: 'if', test, then, else: otherwise };
}

const KEY = "(request.operation + ':' + request.resource.resource)";
const CLUSTER =
  "(request.namespace == '' || (request.resource.group == '' && request.resource.resource == 'namespaces'))";

/** A CEL string literal (JSON's escapes are CEL's too). */
export function celString(s: string): string {
  return JSON.stringify(s);
}

function celList(items: readonly string[]): string {
  return `[${items.map(celString).join(', ')}]`;
}

/** The CEL text of a condition. */
export function renderCel(c: Condition): string {
  switch (c.t) {
    case 'const':
      return c.value ? 'true' : 'false';
    case 'keyIn':
      return `${KEY} in ${celList(c.keys)}`;
    case 'opIn':
      return `request.operation in ${celList(c.ops)}`;
    case 'cluster':
      return CLUSTER;
    case 'nsIn':
      return `request.namespace in ${celList(c.names)}`;
    case 'nsMatches':
      return `request.namespace.matches(${celString(c.regex.source)})`;
    case 'nsBelow':
      return `request.namespace < ${celString(c.bound)}`;
    case 'nsAtLeast':
      return `request.namespace >= ${celString(c.bound)}`;
    case 'object':
      return c.decline.cel;
    case 'not':
      return `!(${renderCel(c.x)})`;
    case 'and':
      return c.xs.map((x) => `(${renderCel(x)})`).join(' && ');
    case 'or':
      return c.xs.map((x) => `(${renderCel(x)})`).join(' || ');
    case 'if':
      return `(${renderCel(c.test)}) ? (${renderCel(c.then)}) : (${renderCel(c.else)})`;
  }
}

/** Evaluates a condition as the API server would (string order is code-point order; names are ASCII). */
export function evaluate(c: Condition, r: ConditionInput): boolean {
  switch (c.t) {
    case 'const':
      return c.value;
    case 'keyIn':
      return c.keys.includes(`${r.operation}:${r.resource}`);
    case 'opIn':
      return c.ops.includes(r.operation);
    case 'cluster':
      return r.namespace === '' || (r.group === '' && r.resource === 'namespaces');
    case 'nsIn':
      return c.names.includes(r.namespace);
    case 'nsMatches':
      return c.regex.test(r.namespace);
    case 'nsBelow':
      return r.namespace < c.bound;
    case 'nsAtLeast':
      return r.namespace >= c.bound;
    case 'object':
      return r.object === undefined || c.decline.declines(r.object);
    case 'not':
      return !evaluate(c.x, r);
    case 'and':
      return c.xs.every((x) => evaluate(x, r));
    case 'or':
      return c.xs.some((x) => evaluate(x, r));
    case 'if':
      return evaluate(c.test, r) ? evaluate(c.then, r) : evaluate(c.else, r);
  }
}

/** The number of distinct regexes in a condition (each costs the API server a match per request). */
export function regexesIn(c: Condition, into = new Set<string>()): Set<string> {
  if (c.t === 'nsMatches') into.add(c.regex.source);
  else if (c.t === 'not') regexesIn(c.x, into);
  else if (c.t === 'and' || c.t === 'or') for (const x of c.xs) regexesIn(x, into);
  else if (c.t === 'if') for (const x of [c.test, c.then, c.else]) regexesIn(x, into);
  return into;
}
