import { ArgNode, CommandNode, PipeNode } from './ast';
import { parseNumber, unquote } from './literals';
import { Token } from './lexer';
import { describe, ParseCursor } from './parse-cursor';

// Pipelines inside actions: optional variable declarations, commands separated by |, and their operands.

/** Parses a pipeline up to `end` (the action's }} or a closing parenthesis). */
export function pipeline(p: ParseCursor, context: string, end: 'rightDelim' | 'rightParen'): PipeNode {
  const start = p.peekNonSpace();
  const decl: string[] = [];
  const isAssign = declaration(p, start, context, decl);
  const cmds: CommandNode[] = [];
  let endTok: Token;
  for (;;) {
    const t = p.peekNonSpace();
    if (t.type === end) {
      endTok = p.nextNonSpace();
      break;
    }
    if (t.type === 'eof') p.fail(end === 'rightParen' ? 'unclosed left paren' : 'unclosed action', t);
    if (t.type === 'pipe' || t.type === (end === 'rightParen' ? 'rightDelim' : 'rightParen')) {
      p.fail(`missing command`, t);
    }
    cmds.push(command(p, end));
    const after = p.peekNonSpace();
    if (after.type === 'pipe') {
      p.nextNonSpace();
      if (p.peekNonSpace().type === end) p.fail('missing command', p.peekNonSpace());
    }
  }
  if (cmds.length === 0) p.fail(`missing command`, endTok);
  // Constants cannot receive a piped value (Go: "non executable command in pipeline stage").
  for (let c = 1; c < cmds.length; c++) {
    const first = cmds[c].args[0].type;
    if (['bool', 'dot', 'nil', 'number', 'string'].includes(first)) {
      p.fail(`non executable command in pipeline stage ${c + 1}`, start);
    }
  }
  if (!isAssign) for (const v of decl) p.vars.push(v);
  const text = p.source.slice(start.offset, endTok.offset).replace(/\s+$/, '');
  return { type: 'pipe', pos: start.pos, decl, isAssign, cmds, text };
}

/**
 * The optional `$x :=`, `$x =` or (range only) `$i, $v :=` at a pipeline's `start`, read past (nothing read when the
 * pipeline starts otherwise): its variables go to `decl`; true for an assignment, whose variables must be declared.
 */
function declaration(p: ParseCursor, start: Token, context: string, decl: string[]): boolean {
  let isAssign = false;
  if (start.type !== 'variable') return isAssign;
  const save = p.i;
  p.nextNonSpace();
  const t = p.nextNonSpace();
  if (t.type === 'declare' || t.type === 'assign') {
    decl.push(start.value);
    isAssign = t.type === 'assign';
  } else if (t.type === 'comma' && context === 'range') {
    const v2 = p.nextNonSpace();
    if (v2.type !== 'variable') p.fail(`range can only initialize variables`, v2);
    const d = p.nextNonSpace();
    if (d.type !== 'declare' && d.type !== 'assign') p.fail(`expected := or = after ${v2.value}`, d);
    decl.push(start.value, v2.value);
    isAssign = d.type === 'assign';
  } else {
    p.i = save;
  }
  if (isAssign) {
    for (const v of decl) if (!p.vars.includes(v)) p.fail(`undefined variable ${JSON.stringify(v)}`, start);
  }
  return isAssign;
}

function command(p: ParseCursor, end: 'rightDelim' | 'rightParen'): CommandNode {
  const first = p.peekNonSpace();
  const args: ArgNode[] = [];
  let lastEnd = first.offset;
  for (;;) {
    const t = p.peekNonSpace();
    if (t.type === end || t.type === 'pipe') break;
    if (t.type === 'eof') p.fail('unclosed action', t);
    const op = operand(p);
    if (!op) return p.fail(`unexpected ${describe(t)} in operand`, t);
    args.push(op);
    lastEnd = p.tokens[p.i - 1].offset + p.tokens[p.i - 1].value.length;
    const n = p.peek();
    if (n.type === 'space') continue;
    if (n.type === end || n.type === 'pipe') break;
    p.fail(`unexpected ${describe(n)} in operand`, n);
  }
  return { pos: first.pos, args, text: p.source.slice(first.offset, lastEnd) };
}

function operand(p: ParseCursor): ArgNode | null {
  const node = term(p);
  if (!node) return null;
  if (p.peek().type !== 'field') return node;
  const fields: string[] = [];
  while (p.peek().type === 'field') fields.push(p.next().value.slice(1));
  switch (node.type) {
    case 'field':
      return { ...node, ident: [...node.ident, ...fields] };
    case 'variable':
      return { ...node, ident: [...node.ident, ...fields] };
    case 'bool':
    case 'string':
    case 'number':
    case 'nil':
    case 'dot':
      return p.fail(`unexpected . after term ${JSON.stringify(node.type)}`, p.tokens[p.i - 1]);
    default:
      return { type: 'chain', pos: node.pos, node, field: fields };
  }
}

function term(p: ParseCursor): ArgNode | null {
  const t = p.nextNonSpace();
  switch (t.type) {
    case 'identifier':
      if (!p.hasFunction(t.value)) p.fail(`function ${JSON.stringify(t.value)} not defined`, t);
      p.functions.add(t.value);
      return { type: 'identifier', pos: t.pos, name: t.value };
    case 'dot':
      return { type: 'dot', pos: t.pos };
    case 'nil':
      return { type: 'nil', pos: t.pos };
    case 'variable':
      if (!p.vars.includes(t.value)) p.fail(`undefined variable ${JSON.stringify(t.value)}`, t);
      return { type: 'variable', pos: t.pos, ident: [t.value] };
    case 'field':
      return { type: 'field', pos: t.pos, ident: [t.value.slice(1)] };
    case 'bool':
      return { type: 'bool', pos: t.pos, value: t.value === 'true' };
    case 'number':
    case 'char':
      return parseNumber(t, p.fail);
    case 'string':
    case 'rawString':
      return { type: 'string', pos: t.pos, value: unquote(t, p.fail), text: t.value };
    case 'leftParen': {
      p.enter(t);
      const inner = pipeline(p, 'parenthesized pipeline', 'rightParen');
      p.depth--;
      return inner;
    }
    default:
      p.i--;
      return null;
  }
}
