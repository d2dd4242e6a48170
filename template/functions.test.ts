import { loadFixture } from '../fixtures/load';
import { compileTemplate, TEMPLATE_FUNCTIONS } from './index';

const data = (): Record<string, unknown> => ({
  Target: loadFixture('pod'),
  Namespace: 'team-a',
  V: {
    s: '  hello world  ',
    name: 'my-app',
    n: 3,
    f: 2.7,
    list: ['b', 'a', 'c', 'a'],
    nums: [1, 2, 3],
    withEmpty: ['a', '', null, 'b', 0],
    map: { b: 2, a: 1 },
    nested: { a: { b: { c: 'deep' } } },
    nul: null,
    emptyList: [],
  },
});
const render = (src: string): string => compileTemplate(src).render(data());

describe('string functions', () => {
  test.each([
    ['{{ trim .V.s }}', 'hello world'],
    ['{{ trimAll "$" "$$5.00$" }}', '5.00'],
    ['{{ trimPrefix "my-" .V.name }}', 'app'],
    ['{{ trimSuffix "-app" .V.name }}', 'my'],
    ['{{ upper "abc" }} {{ lower "ABC" }}', 'ABC abc'],
    ['{{ title "hello wide-world" }}', 'Hello Wide-World'],
    ['{{ untitle "Hello World" }}', 'hello world'],
    ['{{ repeat 3 "ab" }}', 'ababab'],
    ['{{ substr 0 5 "hello world" }}', 'hello'],
    ['{{ substr 6 -1 "hello world" }}', 'world'],
    ['{{ nospace "a b\\tc\\nd" }}', 'abcd'],
    ['{{ trunc 5 "hello world" }}', 'hello'],
    ['{{ trunc -5 "hello world" }}', 'world'],
    ['{{ trunc 50 "short" }}', 'short'],
    ['{{ abbrev 5 "hello world" }}', 'he...'],
    ['{{ abbrev 20 "hello world" }}', 'hello world'],
    ['{{ initials "First Try" }}', 'FT'],
    ['{{ contains "wor" .V.s }} {{ contains "xyz" .V.s }}', 'true false'],
    [
      '{{ hasPrefix "my" .V.name }} {{ hasSuffix "app" .V.name }} {{ hasPrefix "app" .V.name }}',
      'true true false',
    ],
    ['{{ quote "a" "b\\"c" }}', '"a" "b\\"c"'],
    ['{{ quote .V.n }}', '"3"'],
    ['{{ quote .V.missing }}|', '|'],
    ['{{ squote "a" 1 }}', "'a' '1'"],
    ['{{ cat "hello" "beautiful" "world" }}', 'hello beautiful world'],
    ['{{ cat "a" nil 3 }}', 'a 3'],
    ['{{ indent 2 "a\\nb" }}', '  a\n  b'],
    ['x:{{ nindent 2 "a\\nb" }}', 'x:\n  a\n  b'],
    ['{{ replace " " "-" "I Am Henry" }}', 'I-Am-Henry'],
    ['{{ plural "one" "many" 1 }} {{ plural "one" "many" 2 }}', 'one many'],
    ['{{ plural "one" "many" (len .V.list) }}', 'many'],
    ['{{ snakecase "FirstName" }} {{ snakecase "HTTPServer" }}', 'first_name http_server'],
    ['{{ camelcase "http_server" }}', 'HttpServer'],
    ['{{ kebabcase "FirstName" }}', 'first-name'],
    ['{{ swapcase "This Is A.Test" }}', 'tHIS iS a.tEST'],
    ['{{ wrap 5 "Hello World" }}', 'Hello\nWorld'],
    ['{{ shuffle "aaaa" }}', 'aaaa'],
    ['{{ toString 5 }} {{ toString .V.f }} {{ toString .V.list }}', '5 2.7 [b a c a]'],
    ['{{ split "$" "foo$bar$baz" }}', 'map[_0:foo _1:bar _2:baz]'],
    ['{{ (split "$" "foo$bar$baz")._1 }}', 'bar'],
    ['{{ splitList "$" "foo$bar$baz" }}', '[foo bar baz]'],
    ['{{ splitn "$" 2 "foo$bar$baz" }}', 'map[_0:foo _1:bar$baz]'],
    ['{{ join "," .V.list }}', 'b,a,c,a'],
    ['{{ join "-" .V.nums }}', '1-2-3'],
    ['{{ sortAlpha .V.list }}', '[a a b c]'],
    ['{{ env "HOME" }}|{{ expandenv "a $HOME b" }}', '|a  b'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('regex functions', () => {
  test.each([
    ['{{ regexMatch "^[a-z]+-app$" .V.name }}', 'true'],
    ['{{ regexMatch "(" "x" }}', 'false'],
    ['{{ regexFind "[a-zA-Z][1-9]" "abcd1234" }}', 'd1'],
    ['{{ regexFindAll "[2,4,6,8]" "123456789" -1 }}', '[2 4 6 8]'],
    ['{{ regexFindAll "[2,4,6,8]" "123456789" 2 }}', '[2 4]'],
    ['{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}', '-W-xxW-'],
    ['{{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}', '-${1}-${1}-'],
    ['{{ regexSplit "z+" "pizza" -1 }}', '[pi a]'],
    ['{{ regexSplit "z+" "pizza" 1 }}', '[pizza]'],
    ['{{ regexSplit "," "a,b,c" 2 }}', '[a b,c]'],
    ['{{ regexQuoteMeta "1.2*" }}', '1\\.2\\*'],
    ['{{ regexReplaceAll "(?i)NGINX" "nginx:1.25" "web" }}', 'web:1.25'],
    // Exactly what Go allows: 2,000 matches each expanded to 500 characters (1,000,000 <= 1 MiB).
    ['{{ regexReplaceAll "a" (repeat 2000 "a") (repeat 500 "${0}") | len }}', '1000000'],
    ['{{ regexReplaceAll "a(b)" (repeat 1000 "ab") "${1}c" | len }}', '2000'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('defaults and types', () => {
  test.each([
    ['{{ default "foo" .V.missing }}', 'foo'],
    ['{{ default "foo" "" }} {{ default "foo" "bar" }}', 'foo bar'],
    ['{{ .V.missing | default "piped" }}', 'piped'],
    ['{{ default 5 0 }} {{ default 5 .V.n }}', '5 3'],
    [
      '{{ empty "" }} {{ empty .V.list }} {{ empty .V.missing }} {{ empty 0 }} {{ empty .V.map }}',
      'true false true true false',
    ],
    ['{{ coalesce "" .V.missing .V.name }}', 'my-app'],
    ['{{ coalesce "" 0 }}', '<no value>'],
    ['{{ ternary "yes" "no" true }} {{ ternary "yes" "no" (eq .Namespace "x") }}', 'yes no'],
    ['{{ true | ternary "a" "b" }}', 'a'],
    [
      '{{ typeOf .V.n }} {{ typeOf .V.name }} {{ typeOf .V.list }} {{ typeOf .V.map }} {{ typeOf 3 }} {{ typeOf nil }}',
      'float64 string []interface {} map[string]interface {} int <nil>',
    ],
    ['{{ kindOf .V.list }} {{ kindOf .V.map }} {{ kindOf "x" }} {{ kindOf true }}', 'slice map string bool'],
    ['{{ kindIs "map" .V.map }} {{ kindIs "slice" .V.map }} {{ typeIs "float64" .V.f }}', 'true false true'],
    ['{{ deepEqual .V.map (dict "a" 1.0 "b" 2.0) }}', 'true'],
    ['{{ all 1 "a" true }} {{ any 0 "" false }}', 'true false'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('list functions', () => {
  test.each([
    ['{{ list 1 "a" 2.5 nil }}', '[1 a 2.5 <nil>]'],
    ['{{ first .V.list }} {{ last .V.list }}', 'b a'],
    ['{{ rest .V.list }} {{ initial .V.list }}', '[a c a] [b a c]'],
    ['{{ first .V.emptyList }}', '<no value>'],
    ['{{ append .V.nums 4 }} {{ .V.nums }}', '[1 2 3 4] [1 2 3]'],
    ['{{ prepend .V.nums 0 }}', '[0 1 2 3]'],
    ['{{ concat .V.nums (list 4 5) }}', '[1 2 3 4 5]'],
    ['{{ reverse .V.nums }}', '[3 2 1]'],
    ['{{ uniq .V.list }}', '[b a c]'],
    ['{{ without .V.list "a" }}', '[b c]'],
    [
      '{{ has "c" .V.list }} {{ has "z" .V.list }} {{ has 1 .V.nums }} {{ has 1.0 .V.nums }}',
      'true false false true',
    ],
    ['{{ compact .V.withEmpty }}', '[a b]'],
    ['{{ slice .V.list 1 3 }} {{ slice .V.list 2 }} {{ slice .V.list }}', '[a c] [c a] [b a c a]'],
    ['{{ until 3 }}', '[0 1 2]'],
    ['{{ range $i := until 2 }}{{ $i }}{{ end }}', '01'],
    ['{{ index .V.list 2 }} {{ index .V.nested "a" "b" "c" }}', 'c deep'],
    ['{{ len .V.list }} {{ len .V.map }} {{ len "héllo" }}', '4 2 6'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('dict functions', () => {
  test.each([
    ['{{ dict "b" 1 "a" "x" }}', 'map[a:x b:1]'],
    ['{{ dict "odd" }}', 'map[odd:]'],
    ['{{ get .V.map "a" }} {{ get .V.map "zz" }}|', '1 |'],
    ['{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d }}', 'map[a:1 b:2]'],
    ['{{ $d := dict "a" 1 "b" 2 }}{{ $_ := unset $d "a" }}{{ $d }}', 'map[b:2]'],
    ['{{ hasKey .V.map "a" }} {{ hasKey .V.map "z" }}', 'true false'],
    ['{{ keys .V.map }} {{ keys .V.map (dict "c" 1) | sortAlpha }}', '[a b] [a b c]'],
    ['{{ values .V.map }}', '[1 2]'],
    ['{{ pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3) }}', '[1 3]'],
    ['{{ pick .V.map "a" "zz" }} {{ omit .V.map "a" }}', 'map[a:1] map[b:2]'],
    [
      '{{ merge (dict "a" 1 "n" (dict "x" 1)) (dict "a" 2 "b" 3 "n" (dict "y" 2)) }}',
      'map[a:1 b:3 n:map[x:1 y:2]]',
    ],
    ['{{ mergeOverwrite (dict "a" 1) (dict "a" 2 "b" 3) }}', 'map[a:2 b:3]'],
    ['{{ $c := deepCopy .V.nested }}{{ $_ := set $c "a" 1 }}{{ $c }} {{ .V.nested.a.b.c }}', 'map[a:1] deep'],
    ['{{ dig "a" "b" "c" "none" .V.nested }} {{ dig "a" "x" "none" .V.nested }}', 'deep none'],
    ['{{ (dict "__proto__" 1 "constructor" 2) }}', 'map[__proto__:1 constructor:2]'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('encoding functions', () => {
  test.each([
    ['{{ b64enc "hello" }}', 'aGVsbG8='],
    ['{{ b64dec "aGVsbG8=" }}', 'hello'],
    ['{{ b64dec "!!" }}', 'illegal base64 data at input byte 0'],
    ['{{ toJson .V.map }}', '{"a":1,"b":2}'],
    ['{{ toJson .Target.metadata.labels }}', '{"app":"nginx","pod-template-hash":"7c79c4bf97"}'],
    ['{{ toJson "<a & b>" }}', '"\\u003ca \\u0026 b\\u003e"'],
    ['{{ toRawJson "<a & b>" }}', '"<a & b>"'],
    ['{{ toJson (list 1 2.5 nil true "x") }}', '[1,2.5,null,true,"x"]'],
    ['{{ toJson .V.missing }}', 'null'],
    ['{{ toPrettyJson (dict "a" (list 1) "b" (dict)) }}', '{\n  "a": [\n    1\n  ],\n  "b": {}\n}'],
    ['{{ (fromJson "{\\"a\\":{\\"b\\":[1,2]}}").a.b }}', '[1 2]'],
    ['{{ fromJson "not json" }}', '<no value>'],
    ['{{ toYaml (dict "b" (list 1 2) "a" "x") }}', 'a: x\nb:\n- 1\n- 2'],
    ['{{ toYaml (dict "v" "true") }}', 'v: "true"'],
    ['{{ (fromYaml "a: {b: 1}").a.b }}', '1'],
    ['{{ sha256sum "hello" }}', '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'],
    ['{{ sha1sum "hello" }}', 'aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d'],
    ['{{ adler32sum "hello" }}', '103547413'],
    ['{{ uuidv4 | len }}', '36'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('math functions', () => {
  test.each([
    ['{{ add 1 2 3 }}', '6'],
    ['{{ add .V.n 1 }}', '4'],
    ['{{ add1 .V.f }}', '3'],
    ['{{ sub 10 .V.n }}', '7'],
    ['{{ mul 2 3 4 }}', '24'],
    ['{{ div 7 2 }} {{ mod 7 2 }}', '3 1'],
    ['{{ max 1 5 3 }} {{ min 4 2 8 }}', '5 2'],
    ['{{ floor 1.7 }} {{ ceil 1.2 }} {{ round 3.14159 2 }} {{ round 2.5 0 }}', '1 2 3.14 3'],
    ['{{ int "42" }} {{ int .V.f }} {{ int64 "x" }} {{ float64 "1.5" }}', '42 2 0 1.5'],
    ['{{ atoi "12" }} {{ atoi "1.5" }}', '12 0'],
    ['{{ addf 1.5 2 }} {{ mulf 1.5 2 }} {{ divf 1 4 }} {{ subf 1 0.25 }}', '3.5 3 0.25 0.75'],
    ['{{ add "3" 4 }}', '7'],
    ['{{ add 9223372036854775807 1 }}', '-9223372036854775808'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('printf and Go builtins', () => {
  test.each([
    ['{{ printf "%s=%d" "a" 3 }}', 'a=3'],
    ['{{ printf "%v %v" .V.n .V.list }}', '3 [b a c a]'],
    ['{{ printf "%5s|%-5s|" "ab" "cd" }}', '   ab|cd   |'],
    ['{{ printf "%05d %x %X %o %b" 42 255 255 8 5 }}', '00042 ff FF 10 101'],
    ['{{ printf "%.2f %e %g" 3.14159 1234.5 0.5 }}', '3.14 1.234500e+03 0.5'],
    ['{{ printf "%q %t %T" "x" true 1.5 }}', '"x" true float64'],
    ['{{ printf "%d" .V.n }}', '%!d(float64=3)'],
    ['{{ printf "%s %s" "a" }}', 'a %!s(MISSING)'],
    ['{{ printf "%s" "a" "b" }}', 'a%!(EXTRA string=b)'],
    ['{{ printf "100%%" }}', '100%'],
    ['{{ print "a" "b" 1 2 "c" }}', 'ab1 2c'],
    ['{{ println "a" 1 }}', 'a 1\n'],
    ['{{ html "<a href=\'x\'>&</a>" }}', '&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;'],
    ['{{ js "it\'s <b>" }}', "it\\'s \\u003Cb\\u003E"],
    ['{{ urlquery "a b&c=d/é" }}', 'a+b%26c%3Dd%2F%C3%A9'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('TEMPLATE_FUNCTIONS', () => {
  test('lists every function the brief requires, sorted', () => {
    const required =
      'trim trimAll trimPrefix trimSuffix upper lower title untitle repeat substr nospace trunc abbrev initials contains hasPrefix hasSuffix quote squote cat indent nindent replace plural snakecase camelcase kebabcase swapcase wrap shuffle toString split splitList splitn join sortAlpha regexMatch regexFind regexFindAll regexReplaceAll regexReplaceAllLiteral regexSplit default empty coalesce ternary list first last rest initial append prepend concat reverse uniq without has compact slice dict get set unset hasKey keys values pluck merge pick omit deepCopy b64enc b64dec toJson toPrettyJson fromJson toYaml fromYaml sha256sum sha1sum adler32sum add add1 sub mul div mod max min floor ceil round int int64 float64 atoi typeOf kindOf kindIs typeIs uuidv4 and or not len index print printf println eq ne lt le gt ge html js urlquery call env expandenv'.split(
        ' ',
      );
    for (const f of required) expect(TEMPLATE_FUNCTIONS).toContain(f);
    expect([...TEMPLATE_FUNCTIONS].sort()).toEqual(TEMPLATE_FUNCTIONS);
  });

  test.each(TEMPLATE_FUNCTIONS.map((f) => [f]))('%s parses as a function', (f) => {
    expect(() => compileTemplate(`{{ if false }}{{ ${f} }}{{ end }}`)).not.toThrow();
  });
});
