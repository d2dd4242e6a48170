import { BinaryOperator, FunctionName, JsonPathNode, PathNode, Segment } from './ast';
import { JsonPathSyntaxError } from './errors';
import { describe, Token, tokenize } from './lexer';

/** Longest select accepted: selects come from tenants' rules and are parsed on every rule change. */
export const MAX_SOURCE_LENGTH = 4096;
/** Deepest nesting of parentheses, filters, calls and unary operators. */
export const MAX_DEPTH = 100;

const FUNCTIONS: Record<FunctionName, number> = {
  isDefined: 1,
  isUndefined: 1,
  isEmpty: 1,
  isNotEmpty: 1,
  length: 1,
  imageRegistry: 1,
  imageRepository: 1,
  imageTag: 1,
  imageDigest: 1,
};
const KEYWORDS: Record<string, boolean | null> = { true: true, false: false, null: null, nil: null };

// Binary operators by precedence level, loosest first (as in gval: all comparisons share one level).
const LEVELS: readonly (readonly BinaryOperator[])[] = [
  ['||'],
  ['&&'],
  ['==', '!=', '<', '<=', '>', '>=', '=~', '!~', 'in'],
  ['+', '-'],
  ['*', '/', '%'],
];

/** Parses a select into its AST; throws JsonPathSyntaxError naming the column and what was expected. */
export function parseJsonPath(source: string): JsonPathNode {
  if (typeof source !== 'string') throw new JsonPathSyntaxError(1, 'a string', typeof source);
  if (source.length > MAX_SOURCE_LENGTH) {
    throw new JsonPathSyntaxError(MAX_SOURCE_LENGTH + 1, `at most ${MAX_SOURCE_LENGTH} characters`, 'more');
  }
  return new Parser(tokenize(source)).parseAll();
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  parseAll(): JsonPathNode {
    if (this.peek().type === 'eof') this.fail('a JSONPath expression');
    const node = this.parseBinary(0);
    if (this.peek().type !== 'eof') this.fail('an operator or end of input');
    return node;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)];
  }

  private next(): Token {
    const t = this.peek();
    if (t.type !== 'eof') this.pos++;
    return t;
  }

  private is(text: string, offset = 0): boolean {
    const t = this.peek(offset);
    return (t.type === 'punct' || t.type === 'op') && t.text === text;
  }

  private expect(text: string): Token {
    if (!this.is(text)) this.fail(`'${text}'`);
    return this.next();
  }

  private fail(expected: string, token: Token = this.peek()): never {
    throw new JsonPathSyntaxError(token.column, expected, describe(token));
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) this.fail(`at most ${MAX_DEPTH} levels of nesting`);
  }

  private parseBinary(level: number): JsonPathNode {
    if (level === LEVELS.length) return this.parseUnary();
    let left = this.parseBinary(level + 1);
    for (;;) {
      const t = this.peek();
      // `in` is the one operator spelled as a word (KubeMod's gval.InfixOperator("in", inArray)).
      const op =
        (t.type === 'op' || (t.type === 'ident' && t.text === 'in')) &&
        (LEVELS[level] as readonly string[]).includes(t.text)
          ? (t.text as BinaryOperator)
          : null;
      if (!op) return left;
      this.next();
      const right = this.parseBinary(level + 1);
      left = { kind: 'binary', op, left, right, column: t.column };
    }
  }

  private parseUnary(): JsonPathNode {
    const t = this.peek();
    if (t.type === 'op' && (t.text === '!' || t.text === '-')) {
      this.next();
      this.enter();
      const operand = this.parseUnary();
      this.depth--;
      // Fold `-3` into a literal so slices and indices can use negative numbers.
      if (t.text === '-' && operand.kind === 'literal' && typeof operand.value === 'number') {
        return { kind: 'literal', value: -operand.value, column: t.column };
      }
      return { kind: 'unary', op: t.text, operand, column: t.column };
    }
    return this.parsePrimary();
  }

  private parsePrimary(): JsonPathNode {
    const t = this.peek();
    switch (t.type) {
      case 'number':
        this.next();
        return { kind: 'literal', value: t.number as number, column: t.column };
      case 'string':
        this.next();
        return { kind: 'literal', value: t.text, column: t.column };
      case 'ident': {
        if (Object.prototype.hasOwnProperty.call(KEYWORDS, t.text) && !this.is('(', 1)) {
          this.next();
          return { kind: 'literal', value: KEYWORDS[t.text], column: t.column };
        }
        if (!Object.prototype.hasOwnProperty.call(FUNCTIONS, t.text)) {
          this.fail('a path ($ or @), a value or one of the functions ' + Object.keys(FUNCTIONS).join(', '));
        }
        return this.parseCall();
      }
      case 'punct':
        if (t.text === '$' || t.text === '@') return this.parsePath();
        if (t.text === '[') return this.parseArray();
        if (t.text === '(') {
          this.next();
          this.enter();
          const inner = this.parseBinary(0);
          this.depth--;
          this.expect(')');
          return inner;
        }
        break;
      default:
        break;
    }
    return this.fail('a path ($ or @), a value or a function call');
  }

  private parseCall(): JsonPathNode {
    const nameTok = this.next();
    const name = nameTok.text as FunctionName;
    this.expect('(');
    this.enter();
    const args: JsonPathNode[] = [];
    if (!this.is(')')) {
      args.push(this.parseBinary(0));
      while (this.is(',')) {
        this.next();
        args.push(this.parseBinary(0));
      }
    }
    this.depth--;
    if (args.length !== FUNCTIONS[name] && !this.is(')')) this.fail(`')'`);
    const close = this.expect(')');
    if (args.length !== FUNCTIONS[name]) {
      throw new JsonPathSyntaxError(
        close.column,
        `exactly ${FUNCTIONS[name]} argument to ${name}()`,
        `${args.length}`,
      );
    }
    return { kind: 'call', name, args, column: nameTok.column };
  }

  // gval.JSON(): `[expr, expr, ...]`.
  private parseArray(): JsonPathNode {
    const open = this.expect('[');
    this.enter();
    const items: JsonPathNode[] = [];
    if (!this.is(']')) {
      items.push(this.parseBinary(0));
      while (this.is(',')) {
        this.next();
        items.push(this.parseBinary(0));
      }
    }
    this.depth--;
    this.expect(']');
    return { kind: 'array', items, column: open.column };
  }

  private parsePath(): PathNode {
    const rootTok = this.next();
    const segments: Segment[] = [];
    for (;;) {
      if (this.is('.')) {
        this.next();
        const t = this.next();
        if (t.type === 'ident') segments.push({ type: 'name', name: t.text });
        else if (t.type === 'op' && t.text === '*') segments.push({ type: 'wildcard' });
        else this.fail(`a property name or '*' after '.'`, t);
      } else if (this.is('..')) {
        this.next();
        segments.push({ type: 'descent' });
        const t = this.peek();
        if (t.type === 'ident') {
          this.next();
          segments.push({ type: 'name', name: t.text });
        } else if (t.type === 'op' && t.text === '*') {
          this.next();
          segments.push({ type: 'wildcard' });
        } else if (this.is('[')) {
          segments.push(this.parseBracket());
        } else if (this.is('(')) {
          segments.push(this.parseScript());
        } else {
          this.fail(`a property name, '*', '[' or '(' after '..'`);
        }
      } else if (this.is('[')) {
        segments.push(this.parseBracket());
      } else if (this.is('(')) {
        segments.push(this.parseScript());
      } else {
        return { kind: 'path', root: rootTok.text as '$' | '@', segments, column: rootTok.column };
      }
    }
  }

  // KubeMod's script selector (jsonpath/parse.go parseScript): `$.a(@ == "x")` maps each value through the
  // expression, evaluated with `@` = that value. A path followed by `(` was a syntax error before.
  private parseScript(): Segment {
    this.expect('(');
    this.enter();
    const script = this.parseBinary(0);
    this.depth--;
    this.expect(')');
    return { type: 'script', script };
  }

  private parseBracket(): Segment {
    this.expect('[');
    if (this.is('*')) {
      this.next();
      this.expect(']');
      return { type: 'wildcard' };
    }
    if (this.is('?')) {
      this.next();
      this.enter();
      const predicate = this.parseBinary(0);
      this.depth--;
      this.expect(']');
      return { type: 'filter', predicate };
    }
    if (this.is(':')) return this.parseSlice(null);
    if (this.peek().type === 'eof' || this.is(']'))
      this.fail(`a quoted name, an index, '*', '?' or a slice after '['`);
    this.enter();
    const first = this.parseBinary(0);
    this.depth--;
    if (this.is(':')) return this.parseSlice(this.integer(first));
    if (this.is(']')) {
      this.next();
      if (first.kind === 'literal' && typeof first.value === 'string')
        return { type: 'name', name: first.value };
      if (first.kind === 'literal' && typeof first.value === 'number' && Number.isInteger(first.value)) {
        return { type: 'index', index: first.value };
      }
      return { type: 'key', key: first };
    }
    const keys = [this.unionKey(first)];
    while (this.is(',')) {
      this.next();
      keys.push(this.unionKey(this.parseUnary()));
    }
    this.expect(']');
    return { type: 'union', keys };
  }

  private unionKey(node: JsonPathNode): string | number {
    if (
      node.kind === 'literal' &&
      (typeof node.value === 'string' || (typeof node.value === 'number' && Number.isInteger(node.value)))
    ) {
      return node.value;
    }
    throw new JsonPathSyntaxError(node.column, 'a quoted name or an integer (union member)', 'an expression');
  }

  private integer(node: JsonPathNode): number {
    if (node.kind === 'literal' && typeof node.value === 'number' && Number.isInteger(node.value))
      return node.value;
    throw new JsonPathSyntaxError(node.column, 'an integer slice bound', 'an expression');
  }

  private optionalInteger(): number | null {
    if (this.is(':') || this.is(']')) return null;
    return this.integer(this.parseUnary());
  }

  private parseSlice(start: number | null): Segment {
    this.expect(':');
    const end = this.optionalInteger();
    let step: number | null = null;
    if (this.is(':')) {
      this.next();
      step = this.optionalInteger();
    }
    if (!this.is(']')) this.fail(`']'`);
    this.next();
    return { type: 'slice', start, end, step };
  }
}
