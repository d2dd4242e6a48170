import { loadFixture } from '../fixtures/load';
import { JsonObject, JsonValue } from '../util/json';
import { applyKubeModOperation, MAX_ARRAY_PADDING } from './kubemod';
import { PatchError } from './operation';
import { parsePointer } from './pointer';
import { applyPatch } from './rfc6902';

// Loose accessors for building expected objects by hand in the tests.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Loose = any;
/* eslint-enable @typescript-eslint/no-explicit-any */

interface Case {
  name: string;
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: JsonValue;
  /** Adjusts the fixture before the operation. */
  setup?: (d: Loose) => void;
  /** Builds the expected result from a fresh (set up) fixture with plain JS. */
  expected?: (d: Loose) => Loose;
  /** Or the error the operation must raise. */
  error?: RegExp;
}

const sidecar = {
  name: 'jaeger-agent',
  image: 'jaegertracing/jaeger-agent:1.28',
  ports: [{ containerPort: 5775 }],
};

const cases: Case[] = [
  // README examples
  {
    name: 'README: add annotation with an escaped slash',
    op: 'add',
    path: '/metadata/annotations/sidecar.istio.io~1inject',
    value: 'false',
    expected: (d) => ((d.metadata.annotations['sidecar.istio.io/inject'] = 'false'), d),
  },
  {
    name: 'README: add a label with an escaped slash',
    op: 'add',
    path: '/metadata/labels/topology.kubernetes.io~1region',
    value: 'us-east-1',
    expected: (d) => ((d.metadata.labels['topology.kubernetes.io/region'] = 'us-east-1'), d),
  },
  {
    name: 'README: append a sidecar with index -1',
    op: 'add',
    path: '/spec/template/spec/containers/-1',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.push(sidecar), d),
  },
  {
    name: 'README: remove of absent /metadata/ownerReferences/0 is ignored',
    op: 'remove',
    path: '/metadata/ownerReferences/0',
    expected: (d) => d,
  },
  {
    name: 'README: replace the image of the second container',
    op: 'replace',
    path: '/spec/template/spec/containers/1/image',
    value: 'my-repo/log-shipper:2.1',
    expected: (d) => ((d.spec.template.spec.containers[1].image = 'my-repo/log-shipper:2.1'), d),
  },
  {
    name: 'README: add securityContext fields to the pod spec',
    op: 'add',
    path: '/spec/template/spec/securityContext/runAsNonRoot',
    value: true,
    expected: (d) => ((d.spec.template.spec.securityContext.runAsNonRoot = true), d),
  },

  // add on objects
  {
    name: 'add over an existing member replaces it',
    op: 'add',
    path: '/metadata/labels/app',
    value: 'web',
    expected: (d) => ((d.metadata.labels.app = 'web'), d),
  },
  {
    name: 'add a new top-level member',
    op: 'add',
    path: '/spec/paused',
    value: true,
    expected: (d) => ((d.spec.paused = true), d),
  },
  {
    name: 'add an object value',
    op: 'add',
    path: '/spec/template/spec/nodeSelector',
    value: { 'kubernetes.io/os': 'linux' },
    expected: (d) => ((d.spec.template.spec.nodeSelector = { 'kubernetes.io/os': 'linux' }), d),
  },
  {
    name: 'add a null value',
    op: 'add',
    path: '/metadata/labels/tier',
    value: null,
    expected: (d) => ((d.metadata.labels.tier = null), d),
  },
  {
    name: 'add with a missing value adds null (KubeMod default)',
    op: 'add',
    path: '/metadata/labels/tier',
    expected: (d) => ((d.metadata.labels.tier = null), d),
  },
  {
    name: 'add an empty key',
    op: 'add',
    path: '/metadata/labels/',
    value: 'x',
    expected: (d) => ((d.metadata.labels[''] = 'x'), d),
  },
  {
    name: 'add a numeric key to an object',
    op: 'add',
    path: '/metadata/labels/0',
    value: 'zero',
    expected: (d) => ((d.metadata.labels['0'] = 'zero'), d),
  },

  // EnsurePathExistsOnAdd
  {
    name: 'add creates missing annotations on a Deployment without any',
    op: 'add',
    path: '/metadata/annotations/sidecar.istio.io~1inject',
    value: 'true',
    setup: (d) => delete d.metadata.annotations,
    expected: (d) => ((d.metadata.annotations = { 'sidecar.istio.io/inject': 'true' }), d),
  },
  {
    name: 'add creates several missing object levels',
    op: 'add',
    path: '/spec/template/metadata/annotations/prometheus.io~1scrape',
    value: 'true',
    expected: (d) => ((d.spec.template.metadata.annotations = { 'prometheus.io/scrape': 'true' }), d),
  },
  {
    name: 'add replaces a null parent with an object',
    op: 'add',
    path: '/metadata/annotations/a',
    value: 'b',
    setup: (d) => (d.metadata.annotations = null),
    expected: (d) => ((d.metadata.annotations = { a: 'b' }), d),
  },
  {
    name: 'add creates an array when the next token is "-"',
    op: 'add',
    path: '/spec/template/spec/containers/0/env/-',
    value: { name: 'A', value: '1' },
    expected: (d) => ((d.spec.template.spec.containers[0].env = [{ name: 'A', value: '1' }]), d),
  },
  {
    name: 'add creates an array when the next token is 0',
    op: 'add',
    path: '/spec/template/spec/containers/0/env/0',
    value: { name: 'A', value: '1' },
    expected: (d) => ((d.spec.template.spec.containers[0].env = [{ name: 'A', value: '1' }]), d),
  },
  {
    name: 'add creates an array when the next token is -1',
    op: 'add',
    path: '/spec/template/spec/tolerations/-1',
    value: { key: 'dedicated', operator: 'Exists' },
    expected: (d) => ((d.spec.template.spec.tolerations = [{ key: 'dedicated', operator: 'Exists' }]), d),
  },
  {
    name: 'add creates a null-padded array when the next token is 2',
    op: 'add',
    path: '/spec/template/spec/tolerations/2',
    value: 'x',
    expected: (d) => ((d.spec.template.spec.tolerations = [null, null, 'x']), d),
  },
  {
    name: 'add refuses to create an array for a negative index other than -1',
    op: 'add',
    path: '/spec/template/spec/tolerations/-2',
    value: 'x',
    error: /negative index -2/,
  },
  {
    name: 'add through a missing array element pads with nulls and creates an object',
    op: 'add',
    path: '/spec/template/spec/containers/3/name',
    value: 'late',
    expected: (d) => (d.spec.template.spec.containers.push(null, { name: 'late' }), d),
  },
  {
    name: 'add through the element just past the end appends an object',
    op: 'add',
    path: '/spec/template/spec/containers/2/name',
    value: 'third',
    expected: (d) => (d.spec.template.spec.containers.push({ name: 'third' }), d),
  },
  {
    name: 'add through "-" appends a new object',
    op: 'add',
    path: '/spec/template/spec/containers/-/name',
    value: 'third',
    expected: (d) => (d.spec.template.spec.containers.push({ name: 'third' }), d),
  },
  {
    name: 'add through a negative index walks from the end',
    op: 'add',
    path: '/spec/template/spec/containers/-1/env',
    value: [],
    expected: (d) => ((d.spec.template.spec.containers[1].env = []), d),
  },
  {
    name: 'add through a scalar fails',
    op: 'add',
    path: '/metadata/name/x',
    value: 'y',
    error: /\/metadata\/name is a string/,
  },
  {
    name: 'add through a non-index token of an array fails',
    op: 'add',
    path: '/spec/template/spec/containers/nginx/image',
    value: 'y',
    error: /not an array index/,
  },
  {
    name: 'add refuses unbounded padding',
    op: 'add',
    path: `/spec/template/spec/tolerations/${MAX_ARRAY_PADDING + 1}`,
    value: 'x',
    error: /too far past the end/,
  },
  {
    name: 'a failed add removes the parents it created',
    op: 'add',
    path: '/spec/template/spec/affinity/nodeAffinity/terms/-2/key',
    value: 'x',
    error: /negative index -2/,
  },
  {
    name: 'a failed add removes the array padding it added',
    op: 'add',
    path: `/spec/template/spec/containers/4/ports/${MAX_ARRAY_PADDING + 5}/name`,
    value: 'x',
    error: /too far past the end/,
  },
  {
    name: 'a failed add restores a null parent it replaced',
    op: 'add',
    path: '/spec/template/metadata/creationTimestamp/x/-7',
    value: 'x',
    error: /negative index -7/,
  },
  {
    name: 'add refuses unbounded padding of an existing array',
    op: 'add',
    path: '/spec/template/spec/containers/100000000/name',
    value: 'x',
    error: /too far past the end/,
  },

  // add on arrays
  {
    name: 'add at index 0 inserts at the front',
    op: 'add',
    path: '/spec/template/spec/containers/0',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.unshift(sidecar), d),
  },
  {
    name: 'add at index 1 inserts in the middle',
    op: 'add',
    path: '/spec/template/spec/containers/1',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.splice(1, 0, sidecar), d),
  },
  {
    name: 'add at index length appends',
    op: 'add',
    path: '/spec/template/spec/containers/2',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.push(sidecar), d),
  },
  {
    name: 'add at "-" appends',
    op: 'add',
    path: '/spec/template/spec/containers/-',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.push(sidecar), d),
  },
  {
    name: 'add at -2 inserts before the last element',
    op: 'add',
    path: '/spec/template/spec/containers/-2',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.splice(1, 0, sidecar), d),
  },
  {
    name: 'add at -(length+1) inserts at the front',
    op: 'add',
    path: '/spec/template/spec/containers/-3',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.unshift(sidecar), d),
  },
  {
    name: 'add at -1 into an empty array',
    op: 'add',
    path: '/spec/template/spec/containers/0/ports/-1',
    value: { containerPort: 443 },
    setup: (d) => (d.spec.template.spec.containers[0].ports = []),
    expected: (d) => ((d.spec.template.spec.containers[0].ports = [{ containerPort: 443 }]), d),
  },
  {
    name: 'add with a "+1" index (Go Atoi accepts a sign)',
    op: 'add',
    path: '/spec/template/spec/containers/+1',
    value: sidecar,
    expected: (d) => (d.spec.template.spec.containers.splice(1, 0, sidecar), d),
  },
  {
    name: 'add past the end of an array fails',
    op: 'add',
    path: '/spec/template/spec/containers/3',
    value: sidecar,
    error: /out of range/,
  },
  {
    name: 'add before -(length+1) fails',
    op: 'add',
    path: '/spec/template/spec/containers/-4',
    value: sidecar,
    error: /out of range/,
  },
  {
    name: 'add at a non-index token of an array fails',
    op: 'add',
    path: '/spec/template/spec/containers/first',
    value: sidecar,
    error: /not an array index/,
  },

  // replace
  {
    name: 'replace an existing member',
    op: 'replace',
    path: '/spec/replicas',
    value: 5,
    expected: (d) => ((d.spec.replicas = 5), d),
  },
  {
    name: 'replace a member whose value is null',
    op: 'replace',
    path: '/spec/template/metadata/creationTimestamp',
    value: 'now',
    expected: (d) => ((d.spec.template.metadata.creationTimestamp = 'now'), d),
  },
  {
    name: 'replace changes the type',
    op: 'replace',
    path: '/spec/strategy',
    value: 'Recreate',
    expected: (d) => ((d.spec.strategy = 'Recreate'), d),
  },
  {
    name: 'replace an array element',
    op: 'replace',
    path: '/spec/template/spec/containers/0',
    value: sidecar,
    expected: (d) => ((d.spec.template.spec.containers[0] = sidecar), d),
  },
  {
    name: 'replace the last array element with -1',
    op: 'replace',
    path: '/spec/template/spec/containers/-1/image',
    value: 'my-repo/log-shipper:2.1',
    expected: (d) => ((d.spec.template.spec.containers[1].image = 'my-repo/log-shipper:2.1'), d),
  },
  {
    name: 'replace with -1 targets the last element itself',
    op: 'replace',
    path: '/spec/template/spec/containers/-1',
    value: sidecar,
    expected: (d) => ((d.spec.template.spec.containers[1] = sidecar), d),
  },
  {
    name: 'replace with -length targets the first element',
    op: 'replace',
    path: '/spec/template/spec/containers/-2',
    value: sidecar,
    expected: (d) => ((d.spec.template.spec.containers[0] = sidecar), d),
  },
  {
    name: 'replace of a missing member fails',
    op: 'replace',
    path: '/metadata/labels/tier',
    value: 'x',
    error: /does not exist/,
  },
  {
    name: 'replace under a missing parent fails',
    op: 'replace',
    path: '/metadata/ownerReferences/0/name',
    value: 'x',
    error: /does not exist/,
  },
  {
    name: 'replace under a null parent fails',
    op: 'replace',
    path: '/spec/template/metadata/creationTimestamp/x',
    value: 'x',
    error: /does not exist/,
  },
  {
    name: 'replace past the end of an array fails',
    op: 'replace',
    path: '/spec/template/spec/containers/2',
    value: sidecar,
    error: /out of range/,
  },
  {
    name: 'replace before -length fails',
    op: 'replace',
    path: '/spec/template/spec/containers/-3',
    value: sidecar,
    error: /out of range/,
  },
  {
    name: 'replace at "-" fails',
    op: 'replace',
    path: '/spec/template/spec/containers/-',
    value: sidecar,
    error: /not an array index/,
  },
  {
    name: 'replace never creates parents',
    op: 'replace',
    path: '/metadata/annotations/x',
    value: 'y',
    setup: (d) => delete d.metadata.annotations,
    error: /does not exist/,
  },

  // remove
  {
    name: 'remove a member',
    op: 'remove',
    path: '/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration',
    expected: (d) => (delete d.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'], d),
  },
  {
    name: 'remove a whole subtree',
    op: 'remove',
    path: '/metadata/managedFields',
    expected: (d) => (delete d.metadata.managedFields, d),
  },
  {
    name: 'remove an array element shifts the rest',
    op: 'remove',
    path: '/spec/template/spec/containers/0',
    expected: (d) => (d.spec.template.spec.containers.splice(0, 1), d),
  },
  {
    name: 'remove with -1 drops the last element',
    op: 'remove',
    path: '/spec/template/spec/containers/-1',
    expected: (d) => (d.spec.template.spec.containers.splice(1, 1), d),
  },
  {
    name: 'remove with -length drops the first element',
    op: 'remove',
    path: '/spec/template/spec/containers/-2',
    expected: (d) => (d.spec.template.spec.containers.splice(0, 1), d),
  },
  {
    name: 'remove of a missing member is ignored',
    op: 'remove',
    path: '/metadata/labels/tier',
    expected: (d) => d,
  },
  {
    name: 'remove under a missing parent is ignored',
    op: 'remove',
    path: '/spec/template/spec/affinity/nodeAffinity',
    expected: (d) => d,
  },
  {
    name: 'remove past the end of an array is ignored',
    op: 'remove',
    path: '/spec/template/spec/containers/2',
    expected: (d) => d,
  },
  {
    name: 'remove before -length is ignored',
    op: 'remove',
    path: '/spec/template/spec/containers/-3',
    expected: (d) => d,
  },
  {
    name: 'remove through a scalar is ignored',
    op: 'remove',
    path: '/metadata/name/x',
    expected: (d) => d,
  },
  {
    name: 'remove through a null is ignored',
    op: 'remove',
    path: '/spec/template/metadata/creationTimestamp/x',
    expected: (d) => d,
  },
  {
    name: 'remove at a non-index token of an array fails (as in evanphx)',
    op: 'remove',
    path: '/spec/template/spec/containers/nginx',
    error: /not an array index/,
  },
  { name: 'remove of the root is a no-op', op: 'remove', path: '', expected: (d) => d },

  // root
  {
    name: 'add at the root replaces the document',
    op: 'add',
    path: '',
    value: { kind: 'ConfigMap' },
    expected: () => ({ kind: 'ConfigMap' }),
  },
  {
    name: 'replace at the root replaces the document',
    op: 'replace',
    path: '',
    value: [1, 2],
    expected: () => [1, 2],
  },
  { name: 'add at the root refuses a scalar', op: 'add', path: '', value: 'x', error: /whole document/ },
  { name: 'replace at the root refuses null', op: 'replace', path: '', value: null, error: /whole document/ },

  // prototype pollution attempts: every key is a plain own member
  {
    name: '__proto__ as a key is a plain member',
    op: 'add',
    path: '/metadata/labels/__proto__',
    value: { polluted: 'yes' },
    expected: (d) => (
      Object.defineProperty(d.metadata.labels, '__proto__', {
        value: { polluted: 'yes' },
        enumerable: true,
        writable: true,
        configurable: true,
      }),
      d
    ),
  },
  {
    name: 'constructor as a key is a plain member',
    op: 'add',
    path: '/metadata/labels/constructor',
    value: 'x',
    expected: (d) => ((d.metadata.labels.constructor = 'x'), d),
  },
  {
    name: 'replace of an inherited name fails',
    op: 'replace',
    path: '/metadata/labels/constructor',
    value: 'x',
    error: /does not exist/,
  },
  {
    name: 'replace of __proto__ fails when it is not an own key',
    op: 'replace',
    path: '/metadata/__proto__',
    value: {},
    error: /does not exist/,
  },
  {
    name: 'remove of an inherited name is ignored',
    op: 'remove',
    path: '/metadata/labels/toString',
    expected: (d) => d,
  },
];

describe('applyKubeModOperation on a Deployment', () => {
  test.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const doc = loadFixture('deployment') as Loose;
    c.setup?.(doc);
    const tokens = parsePointer(c.path);
    if (c.error) {
      const before = JSON.stringify(doc);
      let thrown: unknown;
      try {
        applyKubeModOperation(doc, c.op, tokens, c.value);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(PatchError);
      expect((thrown as PatchError).message).toMatch(c.error);
      expect((thrown as PatchError).path).toBe(c.path);
      // A failed operation leaves the document as it was, parents it created included.
      expect(JSON.stringify(doc)).toBe(before);
      return;
    }
    const fresh = loadFixture('deployment') as Loose;
    c.setup?.(fresh);
    const want = c.expected!(fresh);
    const got = applyKubeModOperation(doc, c.op, tokens, c.value);
    expect(got).toEqual(want);
    expect(Object.keys(got as JsonObject)).toEqual(Object.keys(want));
  });
});

describe('applyKubeModOperation details', () => {
  test('mutates in place and returns the same root', () => {
    const doc = loadFixture('deployment');
    const out = applyKubeModOperation(doc, 'add', ['metadata', 'labels', 'tier'], 'web');
    expect(out).toBe(doc);
    expect((doc.metadata as Loose).labels.tier).toBe('web');
  });

  test('inserted values are copies, so reusing a value cannot alias two places', () => {
    const doc = loadFixture('deployment');
    const env = [{ name: 'A', value: '1' }];
    applyKubeModOperation(doc, 'add', parsePointer('/spec/template/spec/containers/0/env'), env);
    applyKubeModOperation(doc, 'add', parsePointer('/spec/template/spec/containers/1/env'), env);
    applyKubeModOperation(doc, 'add', parsePointer('/spec/template/spec/containers/0/env/-'), { name: 'B' });
    const containers = (doc as Loose).spec.template.spec.containers;
    expect(containers[0].env).toHaveLength(2);
    expect(containers[1].env).toHaveLength(1);
    expect(env).toHaveLength(1);
  });

  test('keeps member order when add overwrites an existing key', () => {
    const doc = loadFixture('deployment');
    applyKubeModOperation(doc, 'add', ['metadata', 'name'], 'renamed');
    expect(Object.keys(doc.metadata as JsonObject)).toEqual(
      Object.keys(loadFixture('deployment').metadata as JsonObject),
    );
  });

  test('a sequence of operations behaves like KubeMod applying a rule', () => {
    let doc: JsonValue = loadFixture('deployment');
    for (const [op, path, value] of [
      ['remove', '/metadata/annotations', undefined],
      ['add', '/metadata/annotations/a', 'b'],
      ['add', '/spec/template/spec/containers/-1', sidecar],
      ['replace', '/spec/template/spec/containers/-1/image', 'jaeger:2'],
      ['remove', '/spec/template/spec/containers/0'],
    ] as Array<['add' | 'replace' | 'remove', string, JsonValue | undefined]>) {
      doc = applyKubeModOperation(doc, op, parsePointer(path), value);
    }
    const d = doc as Loose;
    expect(d.metadata.annotations).toEqual({ a: 'b' });
    expect(d.spec.template.spec.containers.map((c: Loose) => [c.name, c.image])).toEqual([
      ['log-shipper', 'their-repo/log-shipper:2.1'],
      ['jaeger-agent', 'jaeger:2'],
    ]);
  });

  test.each([
    ['__proto__', 'polluted'],
    ['constructor', 'prototype', 'polluted'],
    ['metadata', '__proto__', 'polluted'],
    ['metadata', 'constructor', 'prototype', 'polluted'],
    ['__proto__', '__proto__', 'polluted'],
  ])('never pollutes Object.prototype via %j', (...tokens: string[]) => {
    const doc = loadFixture('deployment');
    applyKubeModOperation(doc, 'add', tokens, 'yes');
    expect(({} as Loose).polluted).toBeUndefined();
    expect((Object.prototype as Loose).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(doc)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
    // The created path exists as own members all the way down.
    let cur: Loose = doc;
    for (const t of tokens.slice(0, -1)) {
      expect(Object.prototype.hasOwnProperty.call(cur, t)).toBe(true);
      cur = cur[t];
    }
    expect(Object.prototype.hasOwnProperty.call(cur, tokens[tokens.length - 1])).toBe(true);
    applyKubeModOperation(doc, 'remove', tokens);
    expect(Object.prototype.hasOwnProperty.call(cur, tokens[tokens.length - 1])).toBe(false);
  });

  test('a value carrying a __proto__ member is copied as a plain member', () => {
    const doc = loadFixture('deployment');
    const value = JSON.parse('{"__proto__": {"polluted": "yes"}}') as JsonObject;
    applyKubeModOperation(doc, 'add', ['metadata', 'labels'], value);
    const labels = (doc.metadata as Loose).labels;
    expect(Object.getPrototypeOf(labels)).toBe(Object.prototype);
    expect(labels.polluted).toBeUndefined();
    expect(JSON.stringify(labels)).toBe('{"__proto__":{"polluted":"yes"}}');
  });

  test('operations on a scalar document', () => {
    expect(() => applyKubeModOperation('text', 'add', ['a'], 1)).toThrow(PatchError);
    expect(() => applyKubeModOperation(null, 'replace', ['a'], 1)).toThrow(PatchError);
    expect(applyKubeModOperation(7, 'remove', ['a'])).toBe(7);
  });

  test('an unknown op is a PatchError', () => {
    expect(() => applyKubeModOperation({}, 'move' as 'add', ['a'], 1)).toThrow(/unsupported operation/);
  });
});

describe('applyKubeModOperation agrees with strict RFC 6902 where both apply', () => {
  /** Every pointer in doc (except the root), in document order. */
  function pointers(doc: JsonValue, prefix = '', out: string[] = []): string[] {
    if (typeof doc !== 'object' || doc === null) return out;
    const entries: Array<[string, JsonValue]> = Array.isArray(doc)
      ? doc.map((v, i) => [String(i), v])
      : Object.entries(doc);
    for (const [k, v] of entries) {
      const p = `${prefix}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      out.push(p);
      pointers(v, p, out);
    }
    return out;
  }

  const all = pointers(loadFixture('deployment'));

  test('the Deployment has a realistic number of locations', () => {
    expect(all.length).toBeGreaterThan(60);
  });

  test.each(['add', 'replace', 'remove'] as const)('%s at every existing location', (op) => {
    const value = { injected: ['by', 'modrule'] };
    for (const path of all) {
      const want = applyPatch(
        loadFixture('deployment'),
        op === 'remove' ? [{ op, path }] : [{ op, path, value }],
      );
      const got = applyKubeModOperation(loadFixture('deployment'), op, parsePointer(path), value);
      expect({ path, doc: got }).toEqual({ path, doc: want });
    }
  });
});
