import { lex } from './lexer';
import { parse } from './parser';

const known = (name: string): boolean => ['upper', 'printf', 'eq'].includes(name);

describe('lexer', () => {
  test('splits text, delimiters and action tokens with positions, applying trim markers', () => {
    const tokens = lex('a \n{{- .x.y | upper -}}\n b');
    expect(tokens.map((t) => [t.type, t.value])).toEqual([
      ['text', 'a'],
      ['leftDelim', '{{'],
      ['field', '.x'],
      ['field', '.y'],
      ['space', ' '],
      ['pipe', '|'],
      ['space', ' '],
      ['identifier', 'upper'],
      ['rightDelim', '}}'],
      ['text', 'b'],
      ['eof', ''],
    ]);
    expect(tokens[7].pos).toEqual({ line: 2, col: 12 });
  });

  test('a minus sign directly after {{ is a number, not a trim marker', () => {
    expect(lex('{{-3}}').map((t) => t.type)).toEqual(['leftDelim', 'number', 'rightDelim', 'eof']);
  });

  test('comments vanish', () => {
    expect(lex('x{{/* hi */}}y').map((t) => t.value)).toEqual(['x', 'y', '']);
  });
});

describe('parser', () => {
  test('builds if/else-if chains as nested nodes', () => {
    const tree = parse('{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}', 't', known);
    expect(tree.root).toHaveLength(1);
    const outer = tree.root[0];
    expect(outer.type).toBe('if');
    if (outer.type !== 'if') return;
    expect(outer.elseList?.[0].type).toBe('if');
  });

  test('records pipelines, declarations and the functions used', () => {
    const tree = parse('{{ $x := .a | upper }}{{ printf "%s" $x }}', 't', known);
    const action = tree.root[0];
    expect(action.type).toBe('action');
    if (action.type !== 'action') return;
    expect(action.pipe.decl).toEqual(['$x']);
    expect(action.pipe.cmds).toHaveLength(2);
    expect([...tree.functions].sort()).toEqual(['printf', 'upper']);
  });

  test('collects define and block bodies', () => {
    const tree = parse('{{ define "a" }}x{{ end }}{{ block "b" . }}y{{ end }}', 't', known);
    expect([...tree.defines.keys()]).toEqual(['a', 'b']);
  });

  test('classifies number constants like Go', () => {
    const tree = parse('{{ eq 1 1.5 1e3 0x10 }}', 't', known);
    const action = tree.root[0];
    if (action.type !== 'action') throw new Error('expected action');
    const nums = action.pipe.cmds[0].args.slice(1);
    expect(nums.map((n) => (n.type === 'number' ? [n.isInt, n.floatTyped] : null))).toEqual([
      [true, false],
      [false, true],
      [true, true],
      [true, false],
    ]);
  });
});
