import { Node } from './ast';
import { TemplateSyntaxError } from './errors';
import { Token } from './lexer';

/** Parser limits: nesting of blocks and parentheses, so hostile templates cannot exhaust the stack. */
export const MAX_NESTING = 100;

/** Where the parser is in the token list, and what the template has declared and used so far. */
export class ParseCursor {
  i = 0;
  depth = 0;
  rangeDepth = 0;
  vars: string[] = ['$'];
  readonly defines = new Map<string, Node[]>();
  readonly functions = new Set<string>();

  constructor(
    readonly tokens: readonly Token[],
    readonly source: string,
    readonly name: string,
    readonly hasFunction: (name: string) => boolean,
  ) {}

  /** Throws a syntax error at `t`; an arrow, so the literal decoders can take it as a value. */
  readonly fail: (msg: string, t: Token) => never = (msg, t) => {
    throw new TemplateSyntaxError(msg, t.pos.line, t.pos.col, this.name);
  };

  peek(): Token {
    return this.tokens[this.i];
  }

  next(): Token {
    return this.tokens[this.i++];
  }

  nextNonSpace(): Token {
    let t = this.next();
    while (t.type === 'space') t = this.next();
    return t;
  }

  peekNonSpace(): Token {
    let j = this.i;
    while (this.tokens[j].type === 'space') j++;
    return this.tokens[j];
  }

  /** One level deeper (a block or parentheses); the caller decrements depth when it leaves. */
  enter(t: Token): void {
    if (++this.depth > MAX_NESTING) this.fail(`nesting deeper than ${MAX_NESTING}`, t);
  }

  expectRightDelim(context: string): Token {
    const t = this.nextNonSpace();
    if (t.type !== 'rightDelim') this.fail(`unexpected ${describe(t)} in ${context}`, t);
    return t;
  }
}

/** A token as Go's parser names it in error messages. */
export function describe(t: Token): string {
  if (t.type === 'eof') return 'EOF';
  if (t.type === 'rightDelim') return '"}}"';
  if (t.type === 'leftDelim') return '"{{"';
  if (t.type === 'keyword') return `<${t.value}>`;
  return `${JSON.stringify(t.value)}`;
}
