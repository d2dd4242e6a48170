import fc from 'fast-check';
import { loadFixture } from '../fixtures/load';
import { JsonObject, JsonValue, jsonEqual } from '../util/json';
import { createPatch } from './diff';
import { cloneValue, setOwn } from './object';
import { JsonPatchOperation } from './operation';
import { applyPatch } from './rfc6902';

const styleCases: Array<[string, JsonValue, JsonValue, JsonPatchOperation[]]> = [
  ['equal objects', { a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 }, []],
  ['equal scalars', 'x', 'x', []],
  ['null to null', null, null, []],
  ['a new member', { a: 1 }, { a: 1, b: 2 }, [{ op: 'add', path: '/b', value: 2 }]],
  ['a removed member', { a: 1, b: 2 }, { a: 1 }, [{ op: 'remove', path: '/b' }]],
  ['a changed scalar', { a: 1 }, { a: 2 }, [{ op: 'replace', path: '/a', value: 2 }]],
  ['a changed type', { a: 1 }, { a: '1' }, [{ op: 'replace', path: '/a', value: '1' }]],
  ['null to object', { a: null }, { a: { b: 1 } }, [{ op: 'replace', path: '/a', value: { b: 1 } }]],
  ['object to array', { a: {} }, { a: [] }, [{ op: 'replace', path: '/a', value: [] }]],
  ['root type change', { a: 1 }, [1], [{ op: 'replace', path: '', value: [1] }]],
  ['root scalar change', 1, 2, [{ op: 'replace', path: '', value: 2 }]],
  [
    'escaped keys',
    { 'a/b': 1 },
    { 'a/b': 2, 'c~d': 3 },
    [
      { op: 'replace', path: '/a~1b', value: 2 },
      { op: 'add', path: '/c~0d', value: 3 },
    ],
  ],
  [
    'nested change',
    { a: { b: { c: 1, d: 2 } } },
    { a: { b: { c: 1, d: 3 } } },
    [{ op: 'replace', path: '/a/b/d', value: 3 }],
  ],
  [
    'array append',
    { a: [1] },
    { a: [1, 2, 3] },
    [
      { op: 'add', path: '/a/1', value: 2 },
      { op: 'add', path: '/a/2', value: 3 },
    ],
  ],
  [
    'array truncation removes from the highest index down',
    { a: [1, 2, 3, 4] },
    { a: [1] },
    [
      { op: 'remove', path: '/a/3' },
      { op: 'remove', path: '/a/2' },
      { op: 'remove', path: '/a/1' },
    ],
  ],
  [
    'array elements compared by position',
    { a: [1, 2, 3] },
    { a: [0, 1, 2, 3] },
    [
      { op: 'add', path: '/a/3', value: 3 },
      { op: 'replace', path: '/a/0', value: 0 },
      { op: 'replace', path: '/a/1', value: 1 },
      { op: 'replace', path: '/a/2', value: 2 },
    ],
  ],
  [
    'array element diffed member by member',
    { a: [{ n: 1, m: 1 }] },
    { a: [{ n: 1, m: 2 }] },
    [{ op: 'replace', path: '/a/0/m', value: 2 }],
  ],
  [
    'emptied array',
    { a: [1, 2] },
    { a: [] },
    [
      { op: 'remove', path: '/a/1' },
      { op: 'remove', path: '/a/0' },
    ],
  ],
];

describe('createPatch style (gomodules.xyz/jsonpatch)', () => {
  test.each(styleCases)('%s', (_name, from, to, want) => {
    const ops = createPatch(from, to);
    expect(ops).toEqual(want);
    expect(jsonEqual(applyPatch(from, ops), to)).toBe(true);
  });

  test('a label added by a ModRule gives one add', () => {
    const from = loadFixture('deployment');
    const to = loadFixture('deployment');
    (to.metadata as { labels: JsonObject }).labels['topology.kubernetes.io/region'] = 'eu-west-1';
    expect(createPatch(from, to)).toEqual([
      { op: 'add', path: '/metadata/labels/topology.kubernetes.io~1region', value: 'eu-west-1' },
    ]);
  });

  test('a sidecar appended to the containers gives one add at the end', () => {
    const from = loadFixture('deployment');
    const to = loadFixture('deployment');
    const sidecar = { name: 'jaeger-agent', image: 'jaegertracing/jaeger-agent:1.28' };
    (to.spec as { template: { spec: { containers: JsonValue[] } } }).template.spec.containers.push(sidecar);
    expect(createPatch(from, to)).toEqual([
      { op: 'add', path: '/spec/template/spec/containers/2', value: sidecar },
    ]);
  });

  test('annotations created on a Deployment without any', () => {
    const from = loadFixture('deployment');
    delete (from.metadata as JsonObject).annotations;
    const to = cloneValue(from);
    (to.metadata as JsonObject).annotations = { 'sidecar.istio.io/inject': 'false' };
    expect(createPatch(from, to)).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { 'sidecar.istio.io/inject': 'false' } },
    ]);
  });

  test('patch values do not alias the target', () => {
    const to = { a: { b: [1] } };
    const ops = createPatch({}, to);
    to.a.b.push(2);
    expect(ops).toEqual([{ op: 'add', path: '/a', value: { b: [1] } }]);
  });

  test('__proto__ keys are diffed as plain members', () => {
    const from = JSON.parse('{"__proto__": {"x": 1}}') as JsonValue;
    const to = JSON.parse('{"__proto__": {"x": 2}, "constructor": 1}') as JsonValue;
    const ops = createPatch(from, to);
    expect(ops).toEqual([
      { op: 'replace', path: '/__proto__/x', value: 2 },
      { op: 'add', path: '/constructor', value: 1 },
    ]);
    expect(JSON.stringify(applyPatch(from, ops))).toBe(JSON.stringify(to));
    expect(({} as { x?: number }).x).toBeUndefined();
  });

  test('a patch is JSON as the API server reads it', () => {
    const from = loadFixture('deployment');
    const to = loadFixture('deployment');
    (to.spec as JsonObject).replicas = 3;
    const ops = JSON.parse(JSON.stringify(createPatch(from, to))) as JsonPatchOperation[];
    expect(applyPatch(from, ops)).toEqual(to);
  });
});

// Keys that stress escaping and prototype handling alongside ordinary ones.
const key = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('a/b', '~', '~1', '/~0', '', '__proto__', 'constructor', 'metadata', '0', '-'),
);

const json: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ maxLength: 8 }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 5 }).map((entries) => {
      const o: JsonObject = {};
      for (const [k, v] of entries) setOwn(o, k, v);
      return o;
    }),
  ),
})).value;

interface Mutation {
  pick: number;
  action: 'set' | 'delete' | 'insert' | 'add';
  key: string;
  value: JsonValue;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  pick: fc.nat(),
  action: fc.constantFrom('set', 'delete', 'insert', 'add'),
  key,
  value: json,
});

/** Every container in doc, in document order. */
function containers(
  doc: JsonValue,
  out: Array<JsonObject | JsonValue[]> = [],
): Array<JsonObject | JsonValue[]> {
  if (typeof doc !== 'object' || doc === null) return out;
  out.push(doc);
  for (const v of Array.isArray(doc) ? doc : Object.values(doc)) containers(v, out);
  return out;
}

/** Applies random edits with plain JS (independent of the code under test). */
function mutate(doc: JsonValue, edits: readonly Mutation[]): JsonValue {
  const root = cloneValue(doc);
  for (const m of edits) {
    const all = containers(root);
    if (all.length === 0) break;
    const c = all[m.pick % all.length];
    if (Array.isArray(c)) {
      const i = c.length === 0 ? 0 : m.pick % c.length;
      if (m.action === 'delete' && c.length > 0) c.splice(i, 1);
      else if (m.action === 'insert') c.splice(i, 0, m.value);
      else if (m.action === 'add') c.push(m.value);
      else if (c.length > 0) c[i] = m.value;
    } else {
      const keys = Object.keys(c);
      if (m.action === 'delete' && keys.length > 0) delete c[keys[m.pick % keys.length]];
      else if (m.action === 'set' && keys.length > 0) setOwn(c, keys[m.pick % keys.length], m.value);
      else setOwn(c, m.key, m.value);
    }
  }
  return root;
}

function roundTrips(from: JsonValue, to: JsonValue): boolean {
  const fromBefore = cloneValue(from);
  const ops = createPatch(from, to);
  const result = applyPatch(from, ops); // strict RFC 6902: throws if any op is invalid in sequence
  if (!jsonEqual(result, to)) return false;
  if (!jsonEqual(from, fromBefore)) return false; // createPatch must not touch its inputs
  return ops.length === 0 ? jsonEqual(from, to) : !jsonEqual(from, to);
}

describe('createPatch properties', () => {
  test('applyPatch(from, createPatch(from, to)) equals to, for random pairs', () => {
    fc.assert(fc.property(json, json, roundTrips), { numRuns: 500 });
  });

  test('round-trips random edits of a random document', () => {
    fc.assert(
      fc.property(json, fc.array(mutation, { maxLength: 6 }), (from, edits) =>
        roundTrips(from, mutate(from, edits)),
      ),
      { numRuns: 500 },
    );
  });

  test('round-trips random edits of the Deployment fixture', () => {
    const deployment = loadFixture('deployment');
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 8 }), (edits) =>
        roundTrips(deployment, mutate(deployment, edits)),
      ),
      { numRuns: 500 },
    );
  });

  test('a document diffed with itself gives []', () => {
    fc.assert(fc.property(json, (v) => createPatch(v, cloneValue(v)).length === 0));
  });

  test('removals inside one array come from the highest index down', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer(), { maxLength: 10 }),
        fc.array(fc.integer(), { maxLength: 10 }),
        (a, b) => {
          const removed = createPatch({ a }, { a: b })
            .filter((op) => op.op === 'remove')
            .map((op) => Number(op.path.split('/')[2]));
          return removed.every((idx, i) => i === 0 || idx < removed[i - 1]);
        },
      ),
    );
  });
});
