import { loadFixture } from '../fixtures/load';
import { JsonValue } from '../util/json';
import { JsonPatchOperation, PatchError } from './operation';
import { applyPatch } from './rfc6902';

// RFC 6902 appendix A examples plus the strictness the API server applies to a webhook's patch.
const ok: Array<[string, JsonValue, JsonPatchOperation[], JsonValue]> = [
  [
    'A.1 add an object member',
    { foo: 'bar' },
    [{ op: 'add', path: '/baz', value: 'qux' }],
    { foo: 'bar', baz: 'qux' },
  ],
  [
    'A.2 add an array element',
    { foo: ['bar', 'baz'] },
    [{ op: 'add', path: '/foo/1', value: 'qux' }],
    { foo: ['bar', 'qux', 'baz'] },
  ],
  [
    'A.3 remove an object member',
    { baz: 'qux', foo: 'bar' },
    [{ op: 'remove', path: '/baz' }],
    { foo: 'bar' },
  ],
  [
    'A.4 remove an array element',
    { foo: ['bar', 'qux', 'baz'] },
    [{ op: 'remove', path: '/foo/1' }],
    { foo: ['bar', 'baz'] },
  ],
  [
    'A.5 replace a value',
    { baz: 'qux', foo: 'bar' },
    [{ op: 'replace', path: '/baz', value: 'boo' }],
    { baz: 'boo', foo: 'bar' },
  ],
  [
    'A.6 move a value',
    { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
    [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
    { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
  ],
  [
    'A.7 move an array element',
    { foo: ['all', 'grass', 'cows', 'eat'] },
    [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
    { foo: ['all', 'cows', 'eat', 'grass'] },
  ],
  [
    'A.8 test a value (success)',
    { baz: 'qux', foo: ['a', 2, 'c'] },
    [
      { op: 'test', path: '/baz', value: 'qux' },
      { op: 'test', path: '/foo/1', value: 2 },
    ],
    { baz: 'qux', foo: ['a', 2, 'c'] },
  ],
  [
    'A.10 add a nested member object',
    { foo: 'bar' },
    [{ op: 'add', path: '/child', value: { grandchild: {} } }],
    { foo: 'bar', child: { grandchild: {} } },
  ],
  [
    'A.14 ~ escape ordering',
    { '/': 9, '~1': 10 },
    [{ op: 'test', path: '/~01', value: 10 }],
    { '/': 9, '~1': 10 },
  ],
  [
    'A.16 add an array value',
    { foo: ['bar'] },
    [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }],
    { foo: ['bar', ['abc', 'def']] },
  ],
  [
    'copy a subtree',
    { a: { b: [1] } },
    [{ op: 'copy', from: '/a', path: '/c' }],
    { a: { b: [1] }, c: { b: [1] } },
  ],
  ['copy into an array', { a: [1, 2] }, [{ op: 'copy', from: '/a/0', path: '/a/-' }], { a: [1, 2, 1] }],
  ['move to the same place is a no-op', { a: 1 }, [{ op: 'move', from: '/a', path: '/a' }], { a: 1 }],
  ['replace the root', { a: 1 }, [{ op: 'replace', path: '', value: [1] }], [1]],
  ['add at the root', { a: 1 }, [{ op: 'add', path: '', value: 'x' }], 'x'],
  ['test the root', { a: [1] }, [{ op: 'test', path: '', value: { a: [1] } }], { a: [1] }],
  [
    'test ignores member order',
    { a: 1, b: 2 },
    [{ op: 'test', path: '', value: { b: 2, a: 1 } }],
    { a: 1, b: 2 },
  ],
  ['test null', { a: null }, [{ op: 'test', path: '/a', value: null }], { a: null }],
  ['replace a null member', { a: null }, [{ op: 'replace', path: '/a', value: 1 }], { a: 1 }],
  ['add an empty key', { a: 1 }, [{ op: 'add', path: '/', value: 2 }], { a: 1, '': 2 }],
  [
    'ops see earlier ops',
    { a: [] },
    [
      { op: 'add', path: '/a/0', value: 'x' },
      { op: 'add', path: '/a/1', value: 'y' },
      { op: 'remove', path: '/a/0' },
    ],
    { a: ['y'] },
  ],
];

const bad: Array<[string, JsonValue, JsonPatchOperation[], RegExp]> = [
  ['A.9 test failure', { baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }], /test failed/],
  [
    'A.12 add to a nonexistent target',
    { foo: 'bar' },
    [{ op: 'add', path: '/baz/bat', value: 'qux' }],
    /does not exist/,
  ],
  [
    'A.15 comparing strings and numbers',
    { '/': 9, '~1': 10 },
    [{ op: 'test', path: '/~01', value: '10' }],
    /test failed/,
  ],
  ['remove a missing member', { a: 1 }, [{ op: 'remove', path: '/b' }], /does not exist/],
  ['remove a missing array element', { a: [1] }, [{ op: 'remove', path: '/a/1' }], /out of range/],
  ['remove the root', { a: 1 }, [{ op: 'remove', path: '' }], /whole document/],
  ['replace a missing member', { a: 1 }, [{ op: 'replace', path: '/b', value: 1 }], /does not exist/],
  ['replace past the end', { a: [1] }, [{ op: 'replace', path: '/a/1', value: 1 }], /out of range/],
  ['add past the end', { a: [1] }, [{ op: 'add', path: '/a/2', value: 1 }], /out of range/],
  ['negative index', { a: [1] }, [{ op: 'add', path: '/a/-1', value: 1 }], /not a valid array index/],
  [
    'leading zero index',
    { a: [1, 2] },
    [{ op: 'replace', path: '/a/01', value: 1 }],
    /not a valid array index/,
  ],
  ['"-" outside add', { a: [1] }, [{ op: 'remove', path: '/a/-' }], /not a valid array index/],
  ['traverse a scalar', { a: 'x' }, [{ op: 'add', path: '/a/b', value: 1 }], /does not exist/],
  ['traverse null', { a: null }, [{ op: 'add', path: '/a/b', value: 1 }], /does not exist/],
  ['move from a missing path', { a: 1 }, [{ op: 'move', from: '/b', path: '/c' }], /does not exist/],
  ['move into its own child', { a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }], /own child/],
  ['copy from a missing path', { a: 1 }, [{ op: 'copy', from: '/b', path: '/c' }], /does not exist/],
  ['invalid pointer', { a: 1 }, [{ op: 'add', path: 'a', value: 1 }], /invalid JSON pointer/],
  [
    'unknown op',
    { a: 1 },
    [{ op: 'merge', path: '/a' } as unknown as JsonPatchOperation],
    /unsupported operation/,
  ],
  [
    'add without a value',
    { a: 1 },
    [{ op: 'add', path: '/b' } as unknown as JsonPatchOperation],
    /needs a "value"/,
  ],
  [
    'move without from',
    { a: 1 },
    [{ op: 'move', path: '/b' } as unknown as JsonPatchOperation],
    /needs a string "from"/,
  ],
  [
    'path not a string',
    { a: 1 },
    [{ op: 'remove', path: 3 } as unknown as JsonPatchOperation],
    /"path" must be a string/,
  ],
  ['inherited member', { a: 1 }, [{ op: 'replace', path: '/constructor', value: 1 }], /does not exist/],
];

describe('applyPatch (strict RFC 6902)', () => {
  test.each(ok)('%s', (_name, doc, ops, want) => {
    const before = JSON.stringify(doc);
    expect(applyPatch(doc, ops)).toEqual(want);
    expect(JSON.stringify(doc)).toBe(before); // works on a copy
  });

  test.each(bad)('%s fails', (_name, doc, ops, message) => {
    const before = JSON.stringify(doc);
    expect(() => applyPatch(doc, ops)).toThrow(PatchError);
    expect(() => applyPatch(doc, ops)).toThrow(message);
    expect(JSON.stringify(doc)).toBe(before);
  });

  test('the error names the operation index and path', () => {
    const ops: JsonPatchOperation[] = [
      { op: 'add', path: '/metadata/labels/tier', value: 'web' },
      { op: 'replace', path: '/spec/template/spec/containers/5/image', value: 'x' },
    ];
    let err: unknown;
    try {
      applyPatch(loadFixture('deployment'), ops);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PatchError);
    expect((err as PatchError).opIndex).toBe(1);
    expect((err as PatchError).path).toBe('/spec/template/spec/containers/5/image');
    expect((err as PatchError).message).toMatch(
      /^operation 1 \(replace "\/spec\/template\/spec\/containers\/5\/image"\)/,
    );
  });

  test('a typical webhook patch on a Deployment', () => {
    const doc = loadFixture('deployment');
    const out = applyPatch(doc, [
      { op: 'add', path: '/metadata/labels/topology.kubernetes.io~1region', value: 'eu-west-1' },
      {
        op: 'add',
        path: '/spec/template/spec/containers/2',
        value: { name: 'jaeger-agent', image: 'jaeger' },
      },
      { op: 'replace', path: '/spec/template/spec/containers/1/image', value: 'my-repo/log-shipper:2.1' },
      { op: 'remove', path: '/metadata/managedFields' },
    ]) as {
      metadata: { labels: object; managedFields?: unknown };
      spec: { template: { spec: { containers: Array<{ name: string; image: string }> } } };
    };
    expect(out.metadata.labels).toEqual({ app: 'nginx', 'topology.kubernetes.io/region': 'eu-west-1' });
    expect(out.metadata.managedFields).toBeUndefined();
    expect(out.spec.template.spec.containers.map((c) => c.image)).toEqual([
      'nginx:1.14.2',
      'my-repo/log-shipper:2.1',
      'jaeger',
    ]);
  });

  test('added values are copies of the patch values', () => {
    const value = { a: [1] };
    const out = applyPatch({}, [{ op: 'add', path: '/x', value }]) as { x: { a: number[] } };
    out.x.a.push(2);
    expect(value.a).toEqual([1]);
  });

  test('__proto__ stays a plain member and never pollutes', () => {
    const out = applyPatch({}, [
      { op: 'add', path: '/__proto__', value: { polluted: 'yes' } },
      { op: 'add', path: '/__proto__/more', value: 1 },
    ]);
    expect(({} as { polluted?: string }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":"yes","more":1}}');
  });
});
