import fc from 'fast-check';
import { parseYamlValue } from '../util/yaml';
import { parseModRuleValue, ValueSyntaxError } from './value';

describe('parseModRuleValue (YAML 1.1, as sigs.k8s.io/yaml)', () => {
  test.each([
    ['8080', 8080],
    ['"8080"', '8080'],
    ['false', false],
    ['"false"', 'false'],
    ['hello', 'hello'],
    ['', null],
    ['~', null],
    ['null', null],
    ['yes', true], // YAML 1.1: quote it to get the string
    ['off', false],
    ['0777', 511],
    ['1e3', 1000],
    ['2020-01-01', '2020-01-01'], // no timestamp resolution
    ['10:30', '10:30'], // no sexagesimal numbers
    ['[a, 1]', ['a', 1]],
    ['{a: 1}', { a: 1 }],
    ['name: x\nports:\n  - containerPort: 80', { name: 'x', ports: [{ containerPort: 80 }] }],
    ['base: &b {a: 1}\nother: *b', { base: { a: 1 }, other: { a: 1 } }],
  ])('%j', (text, expected) => {
    expect(parseModRuleValue(text)).toEqual(expected);
  });

  test.each([['a: [1'], ['.nan'], ['a: 1\n---\nb: 2'], ['!!binary aGVsbG8=']])('%j is rejected', (text) => {
    expect(() => parseModRuleValue(text)).toThrow(ValueSyntaxError);
  });

  test('a __proto__ key stays data', () => {
    const v = parseModRuleValue('__proto__: {polluted: true}') as Record<string, unknown>;
    expect(Object.prototype.hasOwnProperty.call(v, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('alias bombs are cut off', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
    ].join('\n');
    expect(() => parseModRuleValue(bomb)).toThrow(ValueSyntaxError);
  });
});

describe('parseModRuleValue fast path and cache', () => {
  // The full parser, without the fast path or the cache, is the reference.
  const reference = (text: string): unknown => {
    try {
      return { value: parseYamlValue(text) };
    } catch {
      return 'error';
    }
  };
  const actual = (text: string): unknown => {
    try {
      return { value: parseModRuleValue(text) };
    } catch {
      return 'error';
    }
  };

  test.each([
    'web-0',
    'Yes',
    'NO',
    'y',
    'n',
    'On',
    'oFF',
    'Null',
    'nginx:1.14.2',
    'a:',
    'a:b:c',
    'a::b',
    'registry.example.com/shop/web:1.42.0',
    'e1',
    'Infinity',
    'nan',
    '0x1F',
    '1_000',
    '+1',
    '.5',
  ])('%j reads as the full YAML 1.1 parser reads it', (text) => {
    expect(actual(text)).toEqual(reference(text));
    expect(actual(text)).toEqual(reference(text)); // second time from the cache
  });

  test('random scalars read as the full parser reads them', () => {
    const chars = 'aAyYnNoOtTeEfFlLsSuU019_./-: #+x'.split('');
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...chars), { maxLength: 8 }), (cs) => {
        const text = cs.join('');
        expect(actual(text)).toEqual(reference(text));
      }),
      { numRuns: 3000 },
    );
  });
});
