import fc from 'fast-check';
import { formatFloat, formatValue } from './values';

describe("formatFloat matches strconv.FormatFloat(f, 'g', -1, 64)", () => {
  test.each([
    [0, '0'],
    [-0, '-0'],
    [1, '1'],
    [-3, '-3'],
    [8080, '8080'],
    [999999, '999999'],
    [1000000, '1e+06'],
    [1234567, '1.234567e+06'],
    [1.5, '1.5'],
    [0.1, '0.1'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [0.000123, '0.000123'],
    [123456.789, '123456.789'],
    [1e21, '1e+21'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [5e-324, '5e-324'],
    [NaN, 'NaN'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
  ])('%p -> %s', (f, expected) => {
    expect(formatFloat(f)).toBe(expected);
  });

  test('round-trips every finite double', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (f) => {
        const s = formatFloat(f);
        expect(Object.is(Number(s), f)).toBe(true);
        expect(s).toMatch(/^-?(\d+(\.\d+)?|\d(\.\d+)?e[+-]\d{2,3})$/);
      }),
    );
  });
});

describe('formatValue', () => {
  test.each([
    [undefined, '<no value>'],
    [null, '<nil>'],
    ['s', 's'],
    [true, 'true'],
    [3n, '3'],
    [[1, 'a', null, [true]], '[1 a <nil> [true]]'],
    [{ b: [1], a: { y: 1, x: 2 } }, 'map[a:map[x:2 y:1] b:[1]]'],
  ])('%p', (v, expected) => {
    expect(formatValue(v)).toBe(expected);
  });
});
