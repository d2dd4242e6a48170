import fc from 'fast-check';
import { JsonValue } from '../util/json';
import { loadFixture } from '../fixtures/load';
import { compileJsonPath, JsonPathLimitError, JsonPathSyntaxError } from './index';

// Every input either compiles or fails with JsonPathSyntaxError; nothing else may escape. A parser that blew up
// exponentially would trip jest's test timeout: no wall-clock bound here, the machine's load would make it flaky.
function compilesOrSyntaxError(source: string): void {
  try {
    compileJsonPath(source);
  } catch (err) {
    if (!(err instanceof JsonPathSyntaxError)) throw err;
    expect(err.column).toBeGreaterThanOrEqual(1);
    expect(err.column).toBeLessThanOrEqual(source.length + 1);
  }
}

const TOKENS = [
  '$',
  '@',
  '.',
  '..',
  '[',
  ']',
  '(',
  ')',
  '?',
  '*',
  ',',
  ':',
  ' ',
  '-',
  '!',
  '+',
  '/',
  '%',
  '==',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  '=~',
  '!~',
  '&&',
  '||',
  'a',
  'kind',
  'spec',
  'containers',
  'true',
  'false',
  'null',
  '0',
  '1',
  '-1',
  '2.5',
  '"x"',
  "'y.z'",
  '"a/b"',
  '"(?i)ng"',
  '"("',
  '"\\u00e9"',
  '"unterminated',
  'length',
  'isEmpty',
  'isDefined(',
  'isUndefined',
];

describe('parser fuzzing', () => {
  test('arbitrary strings compile or throw JsonPathSyntaxError', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), compilesOrSyntaxError), { numRuns: 3000 });
  });

  test('arbitrary unicode strings compile or throw JsonPathSyntaxError', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 100 }), compilesOrSyntaxError), {
      numRuns: 1000,
    });
  });

  test('strings built from JSONPath tokens compile or throw JsonPathSyntaxError', () => {
    const tokens = fc.array(fc.constantFrom(...TOKENS), { maxLength: 40 }).map((t) => t.join(''));
    fc.assert(fc.property(tokens, compilesOrSyntaxError), { numRuns: 5000 });
  });

  test('well-formed selects with a random tail compile or throw JsonPathSyntaxError', () => {
    const prefix = fc.constantFrom('$.spec.containers', '$.metadata.labels', '$..name', '@', '$');
    const tail = fc.array(fc.constantFrom(...TOKENS), { maxLength: 12 }).map((t) => t.join(''));
    fc.assert(
      fc.property(prefix, tail, (p, t) => compilesOrSyntaxError(p + t)),
      { numRuns: 3000 },
    );
  });

  test('pathologically long or deep input fails fast', () => {
    for (const s of [
      '['.repeat(5000),
      '('.repeat(4000),
      '!'.repeat(4096),
      '$' + '..a'.repeat(1300),
      '"'.repeat(4096),
    ]) {
      compilesOrSyntaxError(s);
    }
  });
});

describe('evaluation never throws on arbitrary JSON', () => {
  const selects = [
    '$',
    '$.kind',
    '$.a.b.c',
    '$[0]',
    '$[-1]',
    '$.*',
    '$[*].x',
    '$..x',
    '$..*',
    '$[1:3]',
    '$[::-1]',
    '$[0,1,"a"]',
    '$[? @ == 1]',
    '$[? @.x > 2 && isDefined(@.y)]',
    '$[? @ =~ "(?i)a"]',
    '$[? length(@) > 1]',
    '$[? isEmpty(@) || isNotEmpty(@)]',
    '$..[? @.a == "b"]',
    '$.a + 1',
    '$.a * $.b - 2',
    '-$.a',
    '!$.a',
    'length($) > 0',
    'length($..*) >= 0',
    '$.a == $.b',
    '$.a < $.b',
    '$.a =~ $.b',
    '$[(@.i)]',
    '$.spec.template.spec.containers[? @.image =~ "nginx"].ports[? @.containerPort == 80]',
  ].map((s) => compileJsonPath(s));

  test('each select returns an array of well-formed results', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const v = value as JsonValue;
        for (const p of selects) {
          const results = p.select(v);
          expect(Array.isArray(results)).toBe(true);
          for (const r of results) {
            expect(r.path === null || r.path === '' || r.path.startsWith('/')).toBe(true);
            expect(Array.isArray(r.indices)).toBe(true);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  test('a result path points at its value', () => {
    const deployment = loadFixture('deployment');
    const resolve = (root: JsonValue, pointer: string): JsonValue | undefined => {
      let v: JsonValue | undefined = root;
      for (const raw of pointer.split('/').slice(1)) {
        const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
        v = v !== null && typeof v === 'object' ? (v as Record<string, JsonValue>)[key] : undefined;
      }
      return v;
    };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.constantFrom(...selects), (value, p) => {
        for (const root of [value as JsonValue, deployment]) {
          let results;
          try {
            results = p.select(root);
          } catch (err) {
            if (err instanceof JsonPathLimitError) continue;
            throw err;
          }
          for (const r of results) if (r.path !== null) expect(resolve(root, r.path)).toEqual(r.value);
        }
      }),
      { numRuns: 500 },
    );
  });
});
