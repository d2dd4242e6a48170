import { ArgNode, BranchNode, CommandNode, Node, NumberNode, PipeNode, Pos, TemplateTree } from './ast';
import { TemplateSyntaxError } from './errors';
import { lex, Token } from './lexer';

/** Parser limits: nesting of blocks and parentheses, so hostile templates cannot exhaust the stack. */
export const MAX_NESTING = 100;
export const MAX_SOURCE_LENGTH = 256 * 1024;

/** Parses Go text/template source into a tree; undefined functions and variables are syntax errors as in Go. */
export function parse(source: string, name: string, hasFunction: (name: string) => boolean): TemplateTree {
  if (source.length > MAX_SOURCE_LENGTH) {
    throw new TemplateSyntaxError(`template longer than ${MAX_SOURCE_LENGTH} characters`, 1, 1, name);
  }
  const tokens = lex(source, name);
  let i = 0;
  let depth = 0;
  let rangeDepth = 0;
  let vars: string[] = ['$'];
  const defines = new Map<string, Node[]>();
  const functions = new Set<string>();

  const peek = (): Token => tokens[i];
  const next = (): Token => tokens[i++];
  const nextNonSpace = (): Token => {
    let t = next();
    while (t.type === 'space') t = next();
    return t;
  };
  const peekNonSpace = (): Token => {
    let j = i;
    while (tokens[j].type === 'space') j++;
    return tokens[j];
  };
  const fail = (msg: string, t: Token): never => {
    throw new TemplateSyntaxError(msg, t.pos.line, t.pos.col, name);
  };
  const describe = (t: Token): string => {
    if (t.type === 'eof') return 'EOF';
    if (t.type === 'rightDelim') return '"}}"';
    if (t.type === 'leftDelim') return '"{{"';
    if (t.type === 'keyword') return `<${t.value}>`;
    return `${JSON.stringify(t.value)}`;
  };
  const enter = (t: Token): void => {
    if (++depth > MAX_NESTING) fail(`nesting deeper than ${MAX_NESTING}`, t);
  };
  const expectRightDelim = (context: string): Token => {
    const t = nextNonSpace();
    if (t.type !== 'rightDelim') fail(`unexpected ${describe(t)} in ${context}`, t);
    return t;
  };

  // Top level: text, actions and {{define}}.
  const root: Node[] = [];
  for (;;) {
    const t = peek();
    if (t.type === 'eof') break;
    if (t.type === 'leftDelim') {
      const kw = tokens[i + 1]?.type === 'space' ? tokens[i + 2] : tokens[i + 1];
      if (kw?.type === 'keyword' && kw.value === 'define') {
        next();
        nextNonSpace();
        parseDefinition(kw);
        continue;
      }
    }
    const n = textOrAction();
    if (n.kind === 'end' || n.kind === 'else') fail(`unexpected {{${n.kind}}}`, n.token);
    if (n.node) root.push(n.node);
  }
  return { name, root, defines, functions };

  function parseDefinition(at: Token): void {
    const nameTok = nextNonSpace();
    if (nameTok.type !== 'string' && nameTok.type !== 'rawString')
      fail('name of template must be a string', nameTok);
    const defName = unquote(nameTok, fail);
    expectRightDelim('define clause');
    const saved = vars;
    vars = ['$'];
    const body = itemList(at, 'define');
    vars = saved;
    if (body.endedWith !== 'end') fail('unexpected {{else}} in define', body.token);
    defines.set(defName, body.nodes);
  }

  // Parses nodes until {{end}} or {{else}}; reports which ended the list.
  function itemList(at: Token, context: string): { nodes: Node[]; endedWith: 'end' | 'else'; token: Token } {
    const nodes: Node[] = [];
    for (;;) {
      if (peek().type === 'eof') fail(`unexpected EOF in ${context}`, at);
      const r = textOrAction();
      if (r.kind === 'end' || r.kind === 'else') return { nodes, endedWith: r.kind, token: r.token };
      if (r.node) nodes.push(r.node);
    }
  }

  function textOrAction(): { kind: 'node' | 'end' | 'else'; node?: Node; token: Token } {
    const t = next();
    if (t.type === 'text') return { kind: 'node', node: { type: 'text', text: t.value }, token: t };
    if (t.type !== 'leftDelim') return fail(`unexpected ${describe(t)}`, t);
    return action(t);
  }

  function action(open: Token): { kind: 'node' | 'end' | 'else'; node?: Node; token: Token } {
    const t = peekNonSpace();
    if (t.type === 'keyword') {
      nextNonSpace();
      switch (t.value) {
        case 'end':
          expectRightDelim('end');
          return { kind: 'end', token: t };
        case 'else':
          // `else if` / `else with` chain: leave the keyword for the caller to parse as a nested block.
          if (peekNonSpace().type === 'keyword' && ['if', 'with'].includes(peekNonSpace().value)) {
            return { kind: 'else', token: t };
          }
          expectRightDelim('else');
          return { kind: 'else', token: t };
        case 'if':
        case 'with':
        case 'range':
          return { kind: 'node', node: control(t.value, t, open), token: t };
        case 'break':
        case 'continue':
          if (rangeDepth === 0) fail(`{{${t.value}}} outside {{range}}`, t);
          expectRightDelim(t.value);
          return { kind: 'node', node: { type: t.value, pos: t.pos }, token: t };
        case 'template':
          return { kind: 'node', node: templateCall(t, open), token: t };
        case 'block':
          return { kind: 'node', node: blockControl(t, open), token: t };
        default:
          return fail(`unexpected <${t.value}> in command`, t);
      }
    }
    const pipe = pipeline('command', 'rightDelim');
    return {
      kind: 'node',
      node: { type: 'action', pos: open.pos, pipe, text: `{{${pipe.text}}}` },
      token: open,
    };
  }

  function control(kind: string, at: Token, open: Token): BranchNode {
    enter(at);
    const savedVars = vars.length;
    if (kind === 'range') rangeDepth++;
    const pipe = pipeline(kind, 'rightDelim');
    const body = itemList(at, kind);
    if (kind === 'range') rangeDepth--;
    let elseList: Node[] | null = null;
    if (body.endedWith === 'else') {
      const kw = peekNonSpace();
      if (kw.type === 'keyword' && (kw.value === 'if' || kw.value === 'with')) {
        // `{{else if}}`: a nested block that consumes the shared {{end}}.
        nextNonSpace();
        elseList = [control(kw.value, kw, open)];
      } else {
        if (kw.type === 'keyword') fail(`unexpected <${kw.value}> in else`, kw);
        const rest = itemList(at, kind);
        if (rest.endedWith === 'else') fail('expected end; found {{else}}', rest.token);
        elseList = rest.nodes;
      }
    }
    vars.length = savedVars;
    depth--;
    return {
      type: kind as BranchNode['type'],
      pos: at.pos,
      pipe,
      list: body.nodes,
      elseList,
      text: `{{${kind} ${pipe.text}}}`,
    };
  }

  function templateCall(at: Token, open: Token): Node {
    const nameTok = nextNonSpace();
    if (nameTok.type !== 'string' && nameTok.type !== 'rawString')
      fail('template name must be a string', nameTok);
    const tname = unquote(nameTok, fail);
    let pipe: PipeNode | null = null;
    if (peekNonSpace().type !== 'rightDelim') pipe = pipeline('template clause', 'rightDelim');
    else expectRightDelim('template clause');
    return {
      type: 'template',
      pos: open.pos,
      name: tname,
      pipe,
      text: `{{template ${JSON.stringify(tname)}}}`,
    };
  }

  function blockControl(at: Token, open: Token): Node {
    const nameTok = nextNonSpace();
    if (nameTok.type !== 'string' && nameTok.type !== 'rawString')
      fail('block name must be a string', nameTok);
    const bname = unquote(nameTok, fail);
    const pipe = pipeline('block clause', 'rightDelim');
    enter(at);
    const saved = vars;
    vars = ['$'];
    const body = itemList(at, 'block');
    vars = saved;
    depth--;
    if (body.endedWith !== 'end') fail('unexpected {{else}} in block', body.token);
    defines.set(bname, body.nodes);
    return { type: 'template', pos: open.pos, name: bname, pipe, text: `{{block ${JSON.stringify(bname)}}}` };
  }

  function pipeline(context: string, end: 'rightDelim' | 'rightParen'): PipeNode {
    const start = peekNonSpace();
    const decl: string[] = [];
    let isAssign = false;
    // Optional `$x :=`, `$x =` or (range only) `$i, $v :=`.
    if (start.type === 'variable') {
      const save = i;
      nextNonSpace();
      const t = nextNonSpace();
      if (t.type === 'declare' || t.type === 'assign') {
        decl.push(start.value);
        isAssign = t.type === 'assign';
      } else if (t.type === 'comma' && context === 'range') {
        const v2 = nextNonSpace();
        if (v2.type !== 'variable') fail(`range can only initialize variables`, v2);
        const d = nextNonSpace();
        if (d.type !== 'declare' && d.type !== 'assign') fail(`expected := or = after ${v2.value}`, d);
        decl.push(start.value, v2.value);
        isAssign = d.type === 'assign';
      } else {
        i = save;
      }
      for (const v of decl) {
        if (isAssign) {
          if (!vars.includes(v)) fail(`undefined variable ${JSON.stringify(v)}`, start);
        }
      }
    }
    const cmds: CommandNode[] = [];
    let endTok: Token;
    for (;;) {
      const t = peekNonSpace();
      if (t.type === end) {
        endTok = nextNonSpace();
        break;
      }
      if (t.type === 'eof') fail(end === 'rightParen' ? 'unclosed left paren' : 'unclosed action', t);
      if (t.type === 'pipe' || t.type === (end === 'rightParen' ? 'rightDelim' : 'rightParen')) {
        fail(`missing command`, t);
      }
      cmds.push(command(end));
      const after = peekNonSpace();
      if (after.type === 'pipe') {
        nextNonSpace();
        if (peekNonSpace().type === end) fail('missing command', peekNonSpace());
      }
    }
    if (cmds.length === 0) fail(`missing command`, endTok);
    // Constants cannot receive a piped value (Go: "non executable command in pipeline stage").
    for (let c = 1; c < cmds.length; c++) {
      const first = cmds[c].args[0].type;
      if (['bool', 'dot', 'nil', 'number', 'string'].includes(first)) {
        fail(`non executable command in pipeline stage ${c + 1}`, start);
      }
    }
    if (!isAssign) for (const v of decl) vars.push(v);
    const text = source.slice(start.offset, endTok.offset).replace(/\s+$/, '');
    return { type: 'pipe', pos: start.pos, decl, isAssign, cmds, text };
  }

  function command(end: 'rightDelim' | 'rightParen'): CommandNode {
    const first = peekNonSpace();
    const args: ArgNode[] = [];
    let lastEnd = first.offset;
    for (;;) {
      const t = peekNonSpace();
      if (t.type === end || t.type === 'pipe') break;
      if (t.type === 'eof') fail('unclosed action', t);
      const op = operand();
      if (!op) return fail(`unexpected ${describe(t)} in operand`, t);
      args.push(op);
      lastEnd = tokens[i - 1].offset + tokens[i - 1].value.length;
      const n = peek();
      if (n.type === 'space') continue;
      if (n.type === end || n.type === 'pipe') break;
      fail(`unexpected ${describe(n)} in operand`, n);
    }
    return { pos: first.pos, args, text: source.slice(first.offset, lastEnd) };
  }

  function operand(): ArgNode | null {
    const node = term();
    if (!node) return null;
    if (peek().type !== 'field') return node;
    const fields: string[] = [];
    while (peek().type === 'field') fields.push(next().value.slice(1));
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
        return fail(`unexpected . after term ${JSON.stringify(node.type)}`, tokens[i - 1]);
      default:
        return { type: 'chain', pos: node.pos, node, field: fields };
    }
  }

  function term(): ArgNode | null {
    const t = nextNonSpace();
    switch (t.type) {
      case 'identifier':
        if (!hasFunction(t.value)) fail(`function ${JSON.stringify(t.value)} not defined`, t);
        functions.add(t.value);
        return { type: 'identifier', pos: t.pos, name: t.value };
      case 'dot':
        return { type: 'dot', pos: t.pos };
      case 'nil':
        return { type: 'nil', pos: t.pos };
      case 'variable':
        if (!vars.includes(t.value)) fail(`undefined variable ${JSON.stringify(t.value)}`, t);
        return { type: 'variable', pos: t.pos, ident: [t.value] };
      case 'field':
        return { type: 'field', pos: t.pos, ident: [t.value.slice(1)] };
      case 'bool':
        return { type: 'bool', pos: t.pos, value: t.value === 'true' };
      case 'number':
      case 'char':
        return parseNumber(t, fail);
      case 'string':
      case 'rawString':
        return { type: 'string', pos: t.pos, value: unquote(t, fail), text: t.value };
      case 'leftParen': {
        enter(t);
        const p = pipeline('parenthesized pipeline', 'rightParen');
        depth--;
        return p;
      }
      default:
        i--;
        return null;
    }
  }
}

type Fail = (msg: string, t: Token) => never;

/** Decodes a Go string, raw string or char literal. */
function unquote(t: Token, fail: Fail): string {
  const s = t.value;
  if (t.type === 'rawString') return s.slice(1, -1).replace(/\r/g, '');
  const body = s.slice(1, -1);
  let out = '';
  for (let k = 0; k < body.length; k++) {
    const c = body[k];
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++k];
    const simple: Record<string, string> = {
      a: '\x07',
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '\\': '\\',
      '"': '"',
      "'": "'",
    };
    if (e in simple && (e !== "'" || t.type === 'char') && (e !== '"' || t.type === 'string')) {
      out += simple[e];
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(k + 1, k + 1 + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) fail(`invalid syntax in ${s}`, t);
      const cp = parseInt(hex, 16);
      if (cp > 0x10ffff) fail(`invalid syntax in ${s}`, t);
      out += String.fromCodePoint(cp);
      k += n;
    } else if (e >= '0' && e <= '7') {
      const oct = body.slice(k, k + 3);
      if (!/^[0-7]{3}$/.test(oct)) fail(`invalid syntax in ${s}`, t);
      out += String.fromCharCode(parseInt(oct, 8));
      k += 2;
    } else {
      fail(`invalid syntax in ${s}`, t);
    }
  }
  return out;
}

/** Go's NumberNode: a constant that may be usable as int, float or both. */
function parseNumber(t: Token, fail: Fail): NumberNode {
  const base = { type: 'number' as const, pos: t.pos, text: t.value };
  if (t.type === 'char') {
    const s = unquote(t, fail);
    const cp = s.codePointAt(0);
    if (cp === undefined || [...s].length !== 1) fail(`malformed character constant: ${t.value}`, t);
    return {
      ...base,
      isInt: true,
      isFloat: true,
      int: BigInt(cp as number),
      float: cp as number,
      floatTyped: false,
    };
  }
  const text = t.value.replace(/_/g, '');
  const neg = text.startsWith('-');
  const unsigned = text.replace(/^[+-]/, '');
  let int: bigint | null = null;
  let float: number;
  if (/^0[xX][0-9a-fA-F]+$/.test(unsigned) || /^0[oObB][0-7]+$/.test(unsigned) || /^[0-9]+$/.test(unsigned)) {
    // Go treats a leading 0 as octal ("0755").
    const lit = /^0[0-7]+$/.test(unsigned) ? `0o${unsigned.slice(1)}` : unsigned;
    int = BigInt(lit);
    if (neg) int = -int;
    float = Number(int);
  } else {
    float = Number(unsigned);
    if (Number.isNaN(float)) fail(`illegal number syntax: ${JSON.stringify(t.value)}`, t);
    if (neg) float = -float;
    if (Number.isInteger(float) && Math.abs(float) < 2 ** 63) int = BigInt(float);
  }
  const inInt64 = int !== null && int >= -(2n ** 63n) && int < 2n ** 63n;
  const isHexInt = /^0[xX]/.test(unsigned) && !/[pP.]/.test(unsigned);
  return {
    ...base,
    isInt: inInt64,
    isFloat: Number.isFinite(float),
    int: inInt64 ? (int as bigint) : 0n,
    float,
    floatTyped: !isHexInt && /[.eEpP]/.test(unsigned),
  };
}

/** The position of a node for error messages. */
export function posOf(n: { pos: Pos }): string {
  return `${n.pos.line}:${n.pos.col}`;
}
