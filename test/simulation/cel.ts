import { compileRegex } from '../../util/regex';

/*
 * The API server's side of the dragnet's matchConditions in the simulation: a small evaluator for the CEL forms the
 * scope writes (scope/condition.ts renderCel). Anything else is a model error, thrown, never guessed: the model must
 * not send (or skip) a request the real API server would treat otherwise.
 */

/** What a condition reads: the admission request's operation, resource and namespace. */
export interface CelRequest {
  operation: string;
  group: string;
  resource: string;
  namespace: string;
}

type Value = string | boolean | Value[] | { [k: string]: Value };

const TOKEN =
  /\s*(?:("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(\|\||&&|==|>=|[()[\]!<?:.,+])|(in\b)|([A-Za-z_][A-Za-z0-9_]*))/y;

function tokenize(text: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (!m) {
      if (/^\s*$/.test(text.slice(at))) break;
      throw new Error(`simulation CEL: cannot read ${JSON.stringify(text.slice(at, at + 30))}`);
    }
    out.push(m[1] ?? m[2] ?? m[3] ?? m[4]);
  }
  return out;
}

/** Evaluates one matchCondition expression of the forms renderCel writes. */
export function evaluateCel(expression: string, request: CelRequest): boolean {
  const tokens = tokenize(expression);
  let i = 0;
  const env: Value = {
    request: {
      operation: request.operation,
      namespace: request.namespace,
      resource: { group: request.group, resource: request.resource },
    },
  };
  const peek = () => tokens[i];
  const take = (want?: string) => {
    const t = tokens[i++];
    if (want !== undefined && t !== want)
      throw new Error(`simulation CEL: want ${want}, got ${t} in ${expression}`);
    return t;
  };
  const bool = (v: Value) => {
    if (typeof v !== 'boolean') throw new Error(`simulation CEL: not a bool in ${expression}`);
    return v;
  };
  function primary(): Value {
    const t = take();
    if (t === '(') {
      const v = ternary();
      take(')');
      return v;
    }
    if (t === '[') {
      const items: Value[] = [];
      while (peek() !== ']') {
        items.push(ternary());
        if (peek() === ',') take();
      }
      take(']');
      return items;
    }
    if (t.startsWith('"')) return JSON.parse(t) as string;
    if (t.startsWith("'"))
      return JSON.parse(`"${t.slice(1, -1).replace(/\\'/g, "'").replace(/"/g, '\\"')}"`) as string;
    if (t === 'true' || t === 'false') return t === 'true';
    if (t === 'request') return (env as Record<string, Value>).request;
    throw new Error(`simulation CEL: unknown ${t} in ${expression}`);
  }
  function postfix(): Value {
    let v = primary();
    while (peek() === '.') {
      take();
      const name = take();
      if (peek() === '(') {
        take('(');
        const arg = ternary();
        take(')');
        if (name !== 'matches' || typeof v !== 'string' || typeof arg !== 'string')
          throw new Error(`simulation CEL: unknown call ${name} in ${expression}`);
        v = compileRegex(arg).test(v);
      } else {
        if (typeof v !== 'object' || Array.isArray(v) || !(name in v))
          throw new Error(`simulation CEL: no field ${name} in ${expression}`);
        v = v[name];
      }
    }
    return v;
  }
  function sum(): Value {
    let v = postfix();
    while (peek() === '+') {
      take();
      const w = postfix();
      v = String(v) + String(w);
    }
    return v;
  }
  function compare(): Value {
    const a = sum();
    const op = peek();
    if (op === '==' || op === '<' || op === '>=' || op === 'in') {
      take();
      const b = sum();
      if (op === '==') return a === b;
      if (op === 'in') return Array.isArray(b) && b.includes(a);
      if (typeof a !== 'string' || typeof b !== 'string')
        throw new Error('simulation CEL: ordering non-strings');
      return op === '<' ? a < b : a >= b;
    }
    return a;
  }
  function unary(): Value {
    if (peek() === '!') {
      take();
      return !bool(unary());
    }
    return compare();
  }
  function and(): Value {
    let v = unary();
    while (peek() === '&&') {
      take();
      const w = unary();
      v = bool(v) && bool(w);
    }
    return v;
  }
  function or(): Value {
    let v = and();
    while (peek() === '||') {
      take();
      const w = and();
      v = bool(v) || bool(w);
    }
    return v;
  }
  function ternary(): Value {
    const test = or();
    if (peek() !== '?') return test;
    take();
    const then = ternary();
    take(':');
    const otherwise = ternary();
    return bool(test) ? then : otherwise;
  }
  const result = ternary();
  if (i !== tokens.length) throw new Error(`simulation CEL: trailing ${tokens[i]} in ${expression}`);
  return bool(result);
}
