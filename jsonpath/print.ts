import { JsonValue } from '../util/json';
import { JsonPathNode, PathNode, Segment } from './ast';

/*
 * A parsed select written back as text that parses to the same tree: what rewritten selects (rule/pod-templates.ts)
 * are compiled from and shown as. Names that are identifiers print as `.name`, others as `['name']`; every operator's
 * operands are parenthesised, so precedence never depends on the printer.
 */

const IDENT = /^[\p{L}_][\p{L}\p{Nd}_]*$/u;

/** The select text of a tree (column numbers are not kept). */
export function printJsonPath(node: JsonPathNode): string {
  switch (node.kind) {
    case 'literal':
      return literal(node.value);
    case 'array':
      return `[${node.items.map(printJsonPath).join(', ')}]`;
    case 'unary':
      return `${node.op}(${printJsonPath(node.operand)})`;
    case 'binary':
      return `(${printJsonPath(node.left)} ${node.op} ${printJsonPath(node.right)})`;
    case 'call':
      return `${node.name}(${node.args.map(printJsonPath).join(', ')})`;
    case 'path':
      return printPath(node);
  }
}

function printPath(node: PathNode): string {
  let out: string = node.root;
  let afterDescent = false;
  for (const s of node.segments) {
    if (s.type === 'descent') {
      out += '..';
      afterDescent = true;
      continue;
    }
    out += segment(s, afterDescent);
    afterDescent = false;
  }
  return out;
}

function segment(s: Exclude<Segment, { type: 'descent' }>, afterDescent: boolean): string {
  switch (s.type) {
    case 'name':
      if (IDENT.test(s.name)) return afterDescent ? s.name : `.${s.name}`;
      return `[${literal(s.name)}]`;
    case 'index':
      return `[${s.index}]`;
    case 'key':
      return `[${printJsonPath(s.key)}]`;
    case 'wildcard':
      return afterDescent ? '*' : '[*]';
    case 'union':
      return `[${s.keys.map((k) => literal(k)).join(',')}]`;
    case 'slice':
      return `[${s.start ?? ''}:${s.end ?? ''}${s.step === null ? '' : `:${s.step}`}]`;
    case 'filter':
      return `[?(${printJsonPath(s.predicate)})]`;
    case 'script':
      return `(${printJsonPath(s.script)})`;
  }
}

function literal(v: JsonValue): string {
  if (typeof v === 'string') return JSON.stringify(v);
  // -0 prints as "0" both ways: written out, it parses back to the same literal (fast-check's token soup `- 0`).
  if (Object.is(v, -0)) return '-0';
  if (typeof v === 'number') return Number.isInteger(v) && v < 0 ? `${v}` : JSON.stringify(v);
  return JSON.stringify(v);
}
