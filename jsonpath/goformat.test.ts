import { formatGoFloat, formatGoValue, parseGoFloat } from './goformat';

// Expected strings are what Go's fmt.Sprintf("%v", x) prints for values decoded by encoding/json.
describe('formatGoFloat matches Go %v', () => {
  const cases: Array<[number, string]> = [
    [80, '80'],
    [0, '0'],
    [-3, '-3'],
    [0.5, '0.5'],
    [123456, '123456'],
    [999999, '999999'],
    [1000000, '1e+06'],
    [1234567, '1.234567e+06'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [1e21, '1e+21'],
    [1.5e-10, '1.5e-10'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
  ];
  test.each(cases)('%p -> %s', (f, s) => expect(formatGoFloat(f)).toBe(s));
});

test('formatGoValue prints maps sorted and slices space-separated', () => {
  expect(formatGoValue({ b: 1, a: [true, null, 'x'] })).toBe('map[a:[true <nil> x] b:1]');
});

test.each([
  ['80', 80],
  ['-1.5e3', -1500],
  ['.5', 0.5],
  ['Inf', Infinity],
  ['80 ', undefined],
  ['0x10', undefined],
  ['', undefined],
  ['abc', undefined],
])('parseGoFloat(%p)', (s, f) => expect(parseGoFloat(s)).toBe(f));
