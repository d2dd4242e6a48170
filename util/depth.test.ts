import { admit } from '../engine/admit';
import { admitChecked, storeFromYaml } from '../engine/testing';
import { JsonObject } from './json';
import { deeperThan, MAX_OBJECT_DEPTH } from './depth';

// A ConfigMap-like object exactly `depth` levels deep (the object itself is level 1).
function nested(depth: number): JsonObject {
  let inner: JsonObject = { leaf: 'x' };
  for (let level = depth - 2; level > 0; level--) inner = { a: inner };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'deep', namespace: 'default' },
    data: inner,
  };
}

const rules = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: label}
spec:
  type: Patch
  match: [{select: '$.kind', matchValue: ConfigMap}]
  patch:
    - {op: add, path: /metadata/labels, value: '{team: {{ .Namespace }}}'}
    - {op: add, path: /metadata/annotations, value: '{size: "{{ .Target | toJson | len }}"}'}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: no-leaf-y}
spec:
  type: Reject
  rejectMessage: 'leaf is {{ .Target.data.a.a.leaf }}'
  match: [{select: '$.kind', matchValue: ConfigMap}, {select: '$.data..leaf', matchValue: 'y'}]
`;

describe('object depth', () => {
  test('deeperThan counts levels of objects and arrays, and stops at the limit', () => {
    expect(deeperThan(nested(10), 10)).toBe(false);
    expect(deeperThan(nested(11), 10)).toBe(true);
    expect(deeperThan([[[]]], 3)).toBe(false);
    expect(deeperThan([[[[]]]], 3)).toBe(true);
    expect(deeperThan('x', 0)).toBe(false);
    expect(deeperThan(nested(1_000_000))).toBe(true);
  });

  test(`an object ${MAX_OBJECT_DEPTH} levels deep goes through every rule (clone, select, render, diff)`, () => {
    const store = storeFromYaml(rules);
    const out = admitChecked(store, nested(MAX_OBJECT_DEPTH));
    expect(out.failures).toEqual([]);
    expect(out.patched.map((r) => r.name)).toEqual(['label']);
    expect(out.allowed).toBe(true);
  });

  test('a deeper object (10,000 levels, as custom resources may be): Patch rules fail, Reject rules reject', () => {
    const store = storeFromYaml(rules);
    for (const depth of [MAX_OBJECT_DEPTH + 1, 10_000, 100_000]) {
      // admit itself (admitChecked's own deep copy of the input would overflow the stack first).
      const out = admit(
        { operation: 'CREATE', object: nested(depth), oldObject: null, namespace: 'default' },
        store.snapshot(),
      );
      // Fail closed: a deep object must not be a way around the Reject rules.
      expect(out.allowed).toBe(false);
      expect(out.rejections).toEqual([
        {
          rule: { namespace: 'default', name: 'no-leaf-y' },
          message: `could not be evaluated: object nests deeper than ${MAX_OBJECT_DEPTH} levels`,
        },
      ]);
      expect(out.patch).toEqual([]);
      expect(out.failures).toEqual([
        {
          rule: { namespace: 'default', name: 'label' },
          message: `object nests deeper than ${MAX_OBJECT_DEPTH} levels; ModRules are not evaluated against it`,
        },
        {
          rule: { namespace: 'default', name: 'no-leaf-y' },
          message: `could not be evaluated: object nests deeper than ${MAX_OBJECT_DEPTH} levels`,
        },
      ]);
    }
  });
});
