import { BranchNode, Node, PipeNode, Pos, TemplateTree } from './ast';
import { TemplateSyntaxError } from './errors';
import { lex, Token } from './lexer';
import { unquote } from './literals';
import { describe, ParseCursor } from './parse-cursor';
import { pipeline } from './parse-pipeline';

export { MAX_NESTING } from './parse-cursor';
/** Longest template source the parser reads. */
export const MAX_SOURCE_LENGTH = 256 * 1024;

/** Parses Go text/template source into a tree; undefined functions and variables are syntax errors as in Go. */
export function parse(source: string, name: string, hasFunction: (name: string) => boolean): TemplateTree {
  if (source.length > MAX_SOURCE_LENGTH) {
    throw new TemplateSyntaxError(`template longer than ${MAX_SOURCE_LENGTH} characters`, 1, 1, name);
  }
  const p = new ParseCursor(lex(source, name), source, name, hasFunction);

  // Top level: text, actions and {{define}}.
  const root: Node[] = [];
  for (;;) {
    const t = p.peek();
    if (t.type === 'eof') break;
    if (t.type === 'leftDelim') {
      const kw = p.tokens[p.i + 1]?.type === 'space' ? p.tokens[p.i + 2] : p.tokens[p.i + 1];
      if (kw?.type === 'keyword' && kw.value === 'define') {
        p.next();
        p.nextNonSpace();
        parseDefinition(p, kw);
        continue;
      }
    }
    const n = textOrAction(p);
    if (n.kind === 'end' || n.kind === 'else') p.fail(`unexpected {{${n.kind}}}`, n.token);
    if (n.node) root.push(n.node);
  }
  return { name, root, defines: p.defines, functions: p.functions };
}

function parseDefinition(p: ParseCursor, at: Token): void {
  const nameTok = p.nextNonSpace();
  if (nameTok.type !== 'string' && nameTok.type !== 'rawString')
    p.fail('name of template must be a string', nameTok);
  const defName = unquote(nameTok, p.fail);
  p.expectRightDelim('define clause');
  const saved = p.vars;
  p.vars = ['$'];
  const body = itemList(p, at, 'define');
  p.vars = saved;
  if (body.endedWith !== 'end') p.fail('unexpected {{else}} in define', body.token);
  p.defines.set(defName, body.nodes);
}

// Parses nodes until {{end}} or {{else}}; reports which ended the list.
function itemList(
  p: ParseCursor,
  at: Token,
  context: string,
): { nodes: Node[]; endedWith: 'end' | 'else'; token: Token } {
  const nodes: Node[] = [];
  for (;;) {
    if (p.peek().type === 'eof') p.fail(`unexpected EOF in ${context}`, at);
    const r = textOrAction(p);
    if (r.kind === 'end' || r.kind === 'else') return { nodes, endedWith: r.kind, token: r.token };
    if (r.node) nodes.push(r.node);
  }
}

function textOrAction(p: ParseCursor): { kind: 'node' | 'end' | 'else'; node?: Node; token: Token } {
  const t = p.next();
  if (t.type === 'text') return { kind: 'node', node: { type: 'text', text: t.value }, token: t };
  if (t.type !== 'leftDelim') return p.fail(`unexpected ${describe(t)}`, t);
  return action(p, t);
}

function action(p: ParseCursor, open: Token): { kind: 'node' | 'end' | 'else'; node?: Node; token: Token } {
  const t = p.peekNonSpace();
  if (t.type === 'keyword') {
    p.nextNonSpace();
    switch (t.value) {
      case 'end':
        p.expectRightDelim('end');
        return { kind: 'end', token: t };
      case 'else':
        // `else if` / `else with` chain: leave the keyword for the caller to parse as a nested block.
        if (p.peekNonSpace().type === 'keyword' && ['if', 'with'].includes(p.peekNonSpace().value)) {
          return { kind: 'else', token: t };
        }
        p.expectRightDelim('else');
        return { kind: 'else', token: t };
      case 'if':
      case 'with':
      case 'range':
        return { kind: 'node', node: control(p, t.value, t, open), token: t };
      case 'break':
      case 'continue':
        if (p.rangeDepth === 0) p.fail(`{{${t.value}}} outside {{range}}`, t);
        p.expectRightDelim(t.value);
        return { kind: 'node', node: { type: t.value, pos: t.pos }, token: t };
      case 'template':
        return { kind: 'node', node: templateCall(p, t, open), token: t };
      case 'block':
        return { kind: 'node', node: blockControl(p, t, open), token: t };
      default:
        return p.fail(`unexpected <${t.value}> in command`, t);
    }
  }
  const pipe = pipeline(p, 'command', 'rightDelim');
  return {
    kind: 'node',
    node: { type: 'action', pos: open.pos, pipe, text: `{{${pipe.text}}}` },
    token: open,
  };
}

function control(p: ParseCursor, kind: string, at: Token, open: Token): BranchNode {
  p.enter(at);
  const savedVars = p.vars.length;
  if (kind === 'range') p.rangeDepth++;
  const pipe = pipeline(p, kind, 'rightDelim');
  const body = itemList(p, at, kind);
  if (kind === 'range') p.rangeDepth--;
  let elseList: Node[] | null = null;
  if (body.endedWith === 'else') {
    const kw = p.peekNonSpace();
    if (kw.type === 'keyword' && (kw.value === 'if' || kw.value === 'with')) {
      // `{{else if}}`: a nested block that consumes the shared {{end}}.
      p.nextNonSpace();
      elseList = [control(p, kw.value, kw, open)];
    } else {
      if (kw.type === 'keyword') p.fail(`unexpected <${kw.value}> in else`, kw);
      const rest = itemList(p, at, kind);
      if (rest.endedWith === 'else') p.fail('expected end; found {{else}}', rest.token);
      elseList = rest.nodes;
    }
  }
  p.vars.length = savedVars;
  p.depth--;
  return {
    type: kind as BranchNode['type'],
    pos: at.pos,
    pipe,
    list: body.nodes,
    elseList,
    text: `{{${kind} ${pipe.text}}}`,
  };
}

function templateCall(p: ParseCursor, at: Token, open: Token): Node {
  const nameTok = p.nextNonSpace();
  if (nameTok.type !== 'string' && nameTok.type !== 'rawString')
    p.fail('template name must be a string', nameTok);
  const tname = unquote(nameTok, p.fail);
  let pipe: PipeNode | null = null;
  if (p.peekNonSpace().type !== 'rightDelim') pipe = pipeline(p, 'template clause', 'rightDelim');
  else p.expectRightDelim('template clause');
  return {
    type: 'template',
    pos: open.pos,
    name: tname,
    pipe,
    text: `{{template ${JSON.stringify(tname)}}}`,
  };
}

function blockControl(p: ParseCursor, at: Token, open: Token): Node {
  const nameTok = p.nextNonSpace();
  if (nameTok.type !== 'string' && nameTok.type !== 'rawString')
    p.fail('block name must be a string', nameTok);
  const bname = unquote(nameTok, p.fail);
  const pipe = pipeline(p, 'block clause', 'rightDelim');
  p.enter(at);
  const saved = p.vars;
  p.vars = ['$'];
  const body = itemList(p, at, 'block');
  p.vars = saved;
  p.depth--;
  if (body.endedWith !== 'end') p.fail('unexpected {{else}} in block', body.token);
  p.defines.set(bname, body.nodes);
  return { type: 'template', pos: open.pos, name: bname, pipe, text: `{{block ${JSON.stringify(bname)}}}` };
}

/** The position of a node for error messages. */
export function posOf(n: { pos: Pos }): string {
  return `${n.pos.line}:${n.pos.col}`;
}
