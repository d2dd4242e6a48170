// KubeMod-compatibility cases for selects: each mirrors a behaviour pinned down by kubemod/kubemod
// jsonpath/placeholder_test.go (what a patch select captures for #N), jsonpath/selector.go (undefined),
// expressions/kubemod_jsonpath.go (functions and KubeMod's boolean logic) or core/modrulestoreitem_test.go.
// The data is our own.
import { JsonValue } from '../util/json';
import { compileJsonPath } from '.';

type Captured = Array<[JsonValue, Array<number | string>]>;

function capture(select: string, data: JsonValue): Captured {
  return compileJsonPath(select)
    .select(data)
    .map((r): [JsonValue, Array<number | string>] => [r.value, [...r.indices]]);
}

const ports: JsonValue = [
  { name: 'http', containerPort: 80 },
  { name: 'https', containerPort: 443 },
  { name: 'metrics', containerPort: 9100 },
  { name: 'admin' },
];

const byKey: JsonValue = {
  '10': { tier: 'web' },
  '20': { tier: 'db', owner: 'ops' },
  blue: { tier: 'cache' },
};

describe('what selects capture for #N (jsonpath/placeholder_test.go)', () => {
  const cases: Array<{ name: string; select: string; data: JsonValue; want: Captured }> = [
    // "range array": a slice captures positions; elements without the member are skipped
    {
      name: 'slice then member',
      select: '$[1:9].containerPort',
      data: ports,
      want: [
        [443, [1]],
        [9100, [2]],
      ],
    },
    // "range object": slices do not range over objects
    { name: 'slice over an object', select: '$[0:5].tier', data: byKey, want: [] },
    // "range all" / "range all even"
    {
      name: 'full slice',
      select: '$[:].name',
      data: ports,
      want: [
        ['http', [0]],
        ['https', [1]],
        ['metrics', [2]],
        ['admin', [3]],
      ],
    },
    {
      name: 'even slice',
      select: '$[::2].name',
      data: ports,
      want: [
        ['http', [0]],
        ['metrics', [2]],
      ],
    },
    // "range all even reverse": a negative step walks back from the end
    {
      name: 'reverse slice',
      select: '$[::-2].name',
      data: ports,
      want: [
        ['admin', [3]],
        ['https', [1]],
      ],
    },
    // "union wildcard array first/second": a union and a wildcard each capture one part
    {
      name: 'union of indices then wildcard',
      select: '$[0, 2].*',
      data: ports,
      want: [
        ['http', [0, 'name']],
        [80, [0, 'containerPort']],
        ['metrics', [2, 'name']],
        [9100, [2, 'containerPort']],
      ],
    },
    // "union wildcard object first/second": a union over an object selects its keys
    {
      name: 'union of keys then wildcard',
      select: '$[10, 20].*',
      data: byKey,
      want: [
        ['web', ['10', 'tier']],
        ['db', ['20', 'tier']],
        ['ops', ['20', 'owner']],
      ],
    },
    // "union bracket wildcard object": [20] on an object is the member "20" (no capture), then [*] captures keys
    {
      name: 'numeric member of an object, then bracket wildcard',
      select: '$[20][*]',
      data: byKey,
      want: [
        ['db', ['tier']],
        ['ops', ['owner']],
      ],
    },
    // "brackets": a wildcard over an object then a quoted member
    {
      name: 'wildcard over an object, quoted member',
      select: '$[*]["tier"]',
      data: byKey,
      want: [
        ['web', ['10']],
        ['db', ['20']],
        ['cache', ['blue']],
      ],
    },
    // "mapper filter": recursive descent with a filter
    {
      name: 'descent with a filter',
      select: '$..[? @.tier == "db"]',
      data: { groups: byKey },
      want: [[{ tier: 'db', owner: 'ops' }, ['/groups', '20']]],
    },
    // "mapper": the descent includes the starting node (KubeMod captures a key list; we capture one pointer)
    {
      name: 'descent includes the root',
      select: '$..owner',
      data: { owner: 'root', sub: { owner: 'nested' } },
      want: [
        ['root', ['']],
        ['nested', ['/sub']],
      ],
    },
  ];

  test.each(cases)('$name', ({ select, data, want }) => {
    expect(capture(select, data)).toEqual(want);
  });
});

describe('KubeMod expression semantics (expressions/kubemod_jsonpath.go, jsonpath/selector.go)', () => {
  const obj: JsonValue = {
    flag: true,
    count: 3,
    text: 'abc',
    empty: '',
    list: [],
    map: {},
    nothing: null,
    labels: { app: 'nginx' },
    names: ['nginx', 'sidecar'],
  };
  // undefined = no result; an evaluation error = no result as well (isMatch then returns negate).
  const cases: Array<{ name: string; select: string; want: JsonValue[] }> = [
    // isDefined/isUndefined: only a missing value is undefined; null is defined
    { name: 'isDefined of null', select: 'isDefined($.nothing)', want: [true] },
    { name: 'isUndefined of a missing member', select: 'isUndefined($.missing.deeper)', want: [true] },
    // valLength: nil and undefined have length 0; strings, lists and maps their size
    { name: 'length of undefined', select: 'length($.missing)', want: [0] },
    { name: 'length of null', select: 'length($.nothing)', want: [0] },
    { name: 'length of a string', select: 'length($.text)', want: [3] },
    { name: 'length of a map', select: 'length($.labels)', want: [1] },
    { name: 'length of a number is an error', select: 'length($.count)', want: [] },
    // isEmpty/isNotEmpty build on valLength
    { name: 'isEmpty of ""', select: 'isEmpty($.empty)', want: [true] },
    { name: 'isEmpty of {}', select: 'isEmpty($.map)', want: [true] },
    { name: 'isEmpty of []', select: 'isEmpty($.list)', want: [true] },
    { name: 'isNotEmpty of a map', select: 'isNotEmpty($.labels)', want: [true] },
    { name: 'isEmpty of a boolean is an error', select: 'isEmpty($.flag)', want: [] },
    // kubeModPropositionalLogic: &&, || and ! take booleans only; short-circuits first
    { name: '&& of booleans', select: '$.flag && $.count > 2', want: [true] },
    { name: '&& with a number is an error', select: '$.count && true', want: [] },
    { name: '! of a number is an error', select: '!$.count', want: [] },
    { name: '&& short-circuits on false', select: 'false && $.missing', want: [false] },
    { name: '|| short-circuits on true', select: '$.flag || $.missing', want: [true] },
    { name: '&& with undefined is an error', select: '$.missing && true', want: [] },
    // gval equality: numeric strings compare as numbers, "true" as a boolean
    { name: 'number equals numeric string', select: '$.count == "3"', want: [true] },
    { name: 'boolean equals "true"', select: '$.flag == "true"', want: [true] },
    // gval Text: strings order lexically
    { name: 'string ordering is lexical', select: '"10" > "9"', want: [false] },
    // regex operator: unanchored RE2
    { name: '=~ is unanchored', select: '$.labels.app =~ "gin"', want: [true] },
    // gval.InfixOperator("in", inArray) with gval.JSON() array literals; membership is reflect.DeepEqual
    { name: 'in an array literal', select: '$.text in ["xyz", "abc"]', want: [true] },
    { name: 'not in an array literal', select: '$.text in ["xyz"]', want: [false] },
    { name: 'in compares without conversion', select: '"3" in [$.count]', want: [false] },
    { name: 'in a path to a list', select: '"nginx" in $.names', want: [true] },
    { name: 'undefined is in no list', select: '$.missing in ["abc"]', want: [false] },
    { name: 'in a non-list is an error', select: '"a" in $.text', want: [] },
    { name: 'in binds tighter than &&', select: '$.text in ["abc"] && $.flag', want: [true] },
    // selector.go: a missing member yields undefined, dropped from results
    { name: 'missing member has no result', select: '$.labels.tier', want: [] },
    { name: 'member of null is undefined', select: '$.nothing.x', want: [] },
  ];

  test.each(cases)('$name', ({ select, want }) => {
    expect(
      compileJsonPath(select)
        .select(obj)
        .map((r) => r.value),
    ).toEqual(want);
  });

  test('in over a wildcard path and inside a filter', () => {
    const data: JsonValue = { containers: [{ name: 'nginx' }, { name: 'sidecar' }] };
    expect(compileJsonPath('"sidecar" in $.containers[*].name').select(data)[0].value).toBe(true);
    expect(capture('$.containers[? @.name in ["sidecar", "other"]].name', data)).toEqual([['sidecar', [1]]]);
  });

  // patch-28: a filter on a nested missing field, counted.
  test('length of a filter over an undefined nested field', () => {
    const containers: JsonValue = [
      { name: 'a', securityContext: { runAsNonRoot: true } },
      { name: 'b', securityContext: {} },
      { name: 'c' },
    ];
    const r = compileJsonPath('length($.containers[? isUndefined(@.securityContext.runAsNonRoot)])').select({
      containers,
    });
    expect(r.map((x) => x.value)).toEqual([2]);
  });
});
