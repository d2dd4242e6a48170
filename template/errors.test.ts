import { loadFixture } from '../fixtures/load';
import { compileTemplate, TemplateRuntimeError, TemplateSyntaxError } from './index';

function syntaxError(src: string): TemplateSyntaxError {
  try {
    compileTemplate(src, 'value');
  } catch (e) {
    if (e instanceof TemplateSyntaxError) return e;
    throw e;
  }
  throw new Error(`expected a syntax error for ${src}`);
}

function runtimeError(
  src: string,
  data: Record<string, unknown> = { Target: loadFixture('deployment') },
): string {
  const t = compileTemplate(src, 'value');
  try {
    t.render(data);
  } catch (e) {
    if (e instanceof TemplateRuntimeError) return e.message;
    throw e;
  }
  throw new Error(`expected a runtime error for ${src}`);
}

describe('syntax errors carry line, column and a clear message', () => {
  test.each([
    ['{{ .Target.metadata.name ', 'unclosed action', 1, 1],
    ['abc\n  {{ foo .x }}', 'function "foo" not defined', 2, 6],
    ['{{ end }}', 'unexpected {{end}}', 1, 4],
    ['{{ else }}', 'unexpected {{else}}', 1, 4],
    ['{{ if .x }}\nyes', 'unexpected EOF', 1, 4],
    ['{{ range .x }}{{ else }}{{ else }}{{ end }}', 'expected end; found {{else}}', 1, 28],
    ['{{ $x }}', 'undefined variable "$x"', 1, 4],
    ['{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}', 'undefined variable "$y"', 1, 39],
    ['{{ "abc }}', 'unterminated quoted string', 1, 4],
    ['{{ `abc }}', 'unterminated raw quoted string', 1, 4],
    ['{{ /* x }}', 'unexpected', 1, 4],
    ['{{/* never closed', 'unclosed comment', 1, 1],
    ['{{/* c */ x }}', 'comment ends before closing delimiter', 1, 8],
    ['{{ (upper "a" }}', 'unclosed left paren', 1, 15],
    ['{{ upper "a") }}', 'unexpected right paren', 1, 13],
    ['{{ 3abc }}', 'bad number syntax', 1, 4],
    ['{{ break }}', '{{break}} outside {{range}}', 1, 4],
    ['{{ .a | }}', 'missing command', 1, 9],
    ['{{ .a | 3 }}', 'non executable command in pipeline stage 2', 1, 4],
    ['{{ "a\\q" }}', 'invalid syntax', 1, 4],
    ['{{ template x }}', 'template name must be a string', 1, 13],
    ['{{ .a # }}', 'unexpected "#" in command', 1, 7],
    ['line1\nline2\n{{ if }}', 'missing command', 3, 7],
  ])('%j', (src, message, line, column) => {
    const e = syntaxError(src);
    expect(e.message).toContain(message);
    expect({ line: e.line, column: e.column }).toEqual({ line, column });
    expect(e.message).toMatch(/^template: value:\d+:\d+: /);
  });

  test('nesting is bounded so a hostile template cannot exhaust the stack', () => {
    expect(syntaxError('{{ ' + '('.repeat(500) + '1' + ')'.repeat(500) + ' }}').message).toContain(
      'nesting deeper',
    );
    expect(syntaxError('{{ if 1 }}'.repeat(200) + '{{ end }}'.repeat(200)).message).toContain(
      'nesting deeper',
    );
  });
});

describe('runtime errors name the action', () => {
  test.each([
    ['{{ index .Target.spec.template.spec.containers 5 }}', 'error calling index: index out of range: 5'],
    ['{{ index .Target.spec.template.spec.containers "a" }}', 'cannot index slice/array with type string'],
    ['{{ index .Target.metadata.name 1.5 }}', 'cannot index slice/array with type float64'],
    ['{{ index .Target.nothing "a" }}', 'error calling index: index of untyped nil'],
    ['{{ index .Target.spec.replicas 0 }}', "can't index item of type float64"],
    ['{{ .Target.metadata.name.first }}', "can't evaluate field first in type string"],
    ['{{ div 1 0 }}', 'error calling div: runtime error: integer divide by zero'],
    ['{{ mod 1 0 }}', 'integer divide by zero'],
    ['{{ upper .Target.spec.replicas }}', 'wrong type for value; expected string; got float64'],
    ['{{ upper .Target.missing }}', 'invalid value; expected string'],
    ['{{ repeat .Target.spec.replicas "x" }}', 'wrong type for value; expected int; got float64'],
    ['{{ repeat "3" "x" }}', 'expected integer; found "3"'],
    ['{{ trunc 1.5 "x" }}', 'expected integer; found 1.5'],
    ['{{ upper 3 }}', 'expected string; found 3'],
    ['{{ upper "a" "b" }}', 'wrong number of args for upper: want 1 got 2'],
    ['{{ printf }}', 'wrong number of args for printf: want at least 1 got 0'],
    ['{{ eq .Target.spec.replicas 2 }}', 'error calling eq: incompatible types for comparison'],
    ['{{ lt .Target.missing 1 }}', 'invalid type for comparison'],
    ['{{ len 3 }}', 'len of type int'],
    ['{{ first "abc" }}', 'Cannot find first on type string'],
    ['{{ regexFind "(" "x" }}', 'error parsing regexp'],
    ['{{ call .Target }}', 'call is not supported'],
    ['{{ fail "custom reason" }}', 'error calling fail: custom reason'],
    ['{{ template "nope" }}', 'no such template "nope"'],
    ['{{ range .Target.metadata.name }}{{ end }}', "range can't iterate over nginx"],
    ['{{ nil }}', 'nil is not a command'],
    ['{{ .Target.metadata.name "x" }}', 'name is not a method but has arguments'],
    ['{{ "x" | .Target.metadata.name }}', 'name is not a method but has arguments'],
    ['{{ $x := 1 }}{{ $x 2 }}', "can't give argument to non-function $x"],
    ['{{ substr 5 2 "hello" }}', 'slice bounds out of range'],
    ['{{ set .Target.nothing "a" 1 }}', 'assignment to entry in nil map'],
  ])('%s', (src, message) => {
    const msg = runtimeError(src);
    expect(msg).toContain(message);
    expect(msg).toMatch(/^template: value:1:\d+: executing "value" at <.+>: /);
  });

  test('stepping through a null value is an error, as in Go', () => {
    expect(runtimeError('{{ .V.n.y }}', { V: { n: null } })).toContain(
      'nil pointer evaluating interface {}.y',
    );
    expect(compileTemplate('{{ .V.missing.y }}').render({ V: {} })).toBe('<no value>');
  });

  test('the message shows the failing command, not the whole action', () => {
    expect(runtimeError('{{ upper (index .Target.spec.template.spec.containers 9).name }}')).toBe(
      'template: value:1:11: executing "value" at <index .Target.spec.template.spec.containers 9>: error calling index: index out of range: 9',
    );
  });
});

describe('limits: a tenant template cannot hurt others', () => {
  test('output is capped', () => {
    expect(runtimeError('{{ range until 100000 }}{{ repeat 100 "x" }}{{ end }}')).toMatch(
      /output exceeds 1048576 bytes|exceeded/,
    );
  });

  test('repeat cannot build huge strings', () => {
    expect(runtimeError('{{ repeat 100000000 "abc" }}')).toContain('repeat result longer than');
  });

  test.each([
    ['indent', '{{ indent 100000 (repeat 1000 "\\n") }}', 'indent result longer than'],
    ['replace', '{{ replace "" (repeat 1000 "x") (repeat 2000 "y") }}', 'replace result longer than'],
    ['join', '{{ join (repeat 100000 "x") (list 1 2 3 4 5 6 7 8 9 10 11 12) }}', 'join result longer than'],
    [
      'regexReplaceAll',
      '{{ regexReplaceAll "" (repeat 2000 "a") (repeat 1000 "b") }}',
      'regexReplaceAll result longer than',
    ],
    [
      'regex groups',
      '{{ regexReplaceAll "a" (repeat 2000 "a") (repeat 600 "${0}") }}',
      'regexReplaceAll result longer than',
    ],
    ['printf width', '{{ printf "%*d" 100000000 1 | len }}', ''],
    [
      'toYaml of a shared structure',
      '{{ $d := dict "x" 1 }}{{ range until 40 }}{{ $d = dict "a" $d "b" $d }}{{ end }}{{ toYaml $d }}',
      'exceeded',
    ],
  ])('functions refuse oversized results before building them: %s', (_name, src, message) => {
    if (message === '') {
      // A huge printf width is clamped instead of allocating hundreds of megabytes.
      expect(compileTemplate(src).render({})).toBe('1000000');
      return;
    }
    expect(runtimeError(src)).toContain(message);
  });

  test('steps are capped', () => {
    expect(runtimeError('{{ range until 2000 }}{{ range until 2000 }}{{ end }}{{ end }}')).toContain(
      'evaluation exceeded 1000000 steps',
    );
  });

  test('quadratic list building is charged', () => {
    expect(
      runtimeError('{{ $l := list }}{{ range until 100000 }}{{ $l = append $l 1 }}{{ end }}{{ len $l }}'),
    ).toContain('exceeded');
  });

  test('string work is charged, so a loop of regexes over large strings stops', () => {
    const big = 'x'.repeat(512 * 1024);
    const msg = runtimeError('{{ range until 100000 }}{{ $_ := regexMatch "y" $.S }}{{ end }}', { S: big });
    expect(msg).toContain('exceeded 1000000 steps');
  });

  test('one call over many large strings is stopped before it allocates', () => {
    const args = ' $.S'.repeat(200);
    expect(runtimeError(`{{ cat${args} | len }}`, { S: 'x'.repeat(1024 * 1024) })).toContain(
      'exceeded 1000000 steps',
    );
  });

  test('deep comparisons are charged', () => {
    const list = Array.from({ length: 1000 }, (_v, i) => ({ a: i, b: [i, i] }));
    const msg = runtimeError('{{ range until 100000 }}{{ $_ := deepEqual $.L $.M }}{{ end }}', {
      L: list,
      M: structuredClone(list),
    });
    expect(msg).toContain('exceeded 1000000 steps');
  });

  test('template recursion depth is capped', () => {
    expect(runtimeError('{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}')).toContain(
      'exceeded maximum template depth',
    );
  });

  test('deep nesting inside recursive templates fails cleanly', () => {
    const body = '{{ if true }}'.repeat(99) + '{{ template "r" . }}' + '{{ end }}'.repeat(99);
    const msg = runtimeError(`{{ define "r" }}${body}{{ end }}{{ template "r" . }}`);
    expect(msg).toMatch(/exceeded maximum template depth|call stack/);
  });

  test('shared structures cannot expand exponentially when printed or encoded', () => {
    let src = '{{ $d := dict "x" 1 }}';
    for (let i = 0; i < 40; i++) src += '{{ $d = dict "a" $d "b" $d }}';
    expect(runtimeError(src + '{{ $d }}')).toMatch(/exceeds/);
    expect(runtimeError(src + '{{ toJson $d | len }}')).toContain('toJson result longer than');
    expect(runtimeError(src + '{{ deepCopy $d }}')).toContain('exceeded');
  });

  test('self-referencing maps do not crash the process', () => {
    const msg = runtimeError('{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}');
    expect(msg).toMatch(/too deeply|exceeds/);
  });

  test('env and expandenv never read the process environment', () => {
    process.env.MODRULE_TEMPLATE_SECRET = 'hunter2';
    try {
      expect(
        compileTemplate(
          '{{ env "MODRULE_TEMPLATE_SECRET" }}|{{ expandenv "$MODRULE_TEMPLATE_SECRET" }}',
        ).render({}),
      ).toBe('|');
    } finally {
      delete process.env.MODRULE_TEMPLATE_SECRET;
    }
  });

  test('very long template source is rejected', () => {
    expect(() => compileTemplate('x'.repeat(300 * 1024))).toThrow(TemplateSyntaxError);
  });
});
