import { escapeToken, formatPointer, parsePointer } from './pointer';
import { PatchError } from './operation';

describe('parsePointer', () => {
  test.each<[string, string[]]>([
    ['', []],
    ['/', ['']],
    ['/metadata', ['metadata']],
    [
      '/metadata/annotations/sidecar.istio.io~1inject',
      ['metadata', 'annotations', 'sidecar.istio.io/inject'],
    ],
    [
      '/metadata/labels/topology.kubernetes.io~1region',
      ['metadata', 'labels', 'topology.kubernetes.io/region'],
    ],
    ['/a~0b', ['a~b']],
    ['/~01', ['~1']], // ~1 is decoded before ~0, so this is "~1" and not "/"
    ['/~10', ['/0']],
    ['/~0~1~1~0', ['~//~']],
    ['/spec/template/spec/containers/-1', ['spec', 'template', 'spec', 'containers', '-1']],
    ['/a//b', ['a', '', 'b']],
    ['/__proto__/polluted', ['__proto__', 'polluted']],
  ])('%j -> %j', (pointer, tokens) => {
    expect(parsePointer(pointer)).toEqual(tokens);
  });

  test.each(['metadata', 'a/b', '#/a', '/a~', '/a~2b', '/~x'])('rejects %j with a PatchError', (pointer) => {
    expect(() => parsePointer(pointer)).toThrow(PatchError);
  });

  test('the error names the pointer', () => {
    expect(() => parsePointer('metadata/name')).toThrow(/metadata\/name/);
  });
});

describe('formatPointer', () => {
  test.each<[string[], string]>([
    [[], ''],
    [[''], '/'],
    [
      ['metadata', 'annotations', 'sidecar.istio.io/inject'],
      '/metadata/annotations/sidecar.istio.io~1inject',
    ],
    [['a~b'], '/a~0b'],
    [['~1'], '/~01'],
    [['0', '-'], '/0/-'],
  ])('%j -> %j', (tokens, pointer) => {
    expect(formatPointer(tokens)).toBe(pointer);
  });

  test('round-trips awkward keys', () => {
    const keys = ['', '~', '/', '~0', '~1', '/~', 'a/b~c/~1', '__proto__'];
    expect(parsePointer(formatPointer(keys))).toEqual(keys);
  });

  test('escapeToken leaves plain keys untouched', () => {
    expect(escapeToken('app.kubernetes.io')).toBe('app.kubernetes.io');
    expect(escapeToken('app.kubernetes.io/name')).toBe('app.kubernetes.io~1name');
  });
});
