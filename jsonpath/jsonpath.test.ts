import { JsonObject, JsonValue } from '../util/json';
import { loadFixture } from '../fixtures/load';
import {
  compileJsonPath,
  JsonPathLimitError,
  JsonPathSyntaxError,
  MAX_DEPTH,
  MAX_DESCENT_DEPTH,
  MAX_SOURCE_LENGTH,
  SelectResult,
} from './index';

type Expected = Array<[value: JsonValue, path: string | null, indices: Array<number | string>]>;

const triples = (rs: SelectResult[]): Expected => rs.map((r) => [r.value, r.path, r.indices]);
const values = (select: string, doc: JsonValue): JsonValue[] =>
  compileJsonPath(select)
    .select(doc)
    .map((r) => r.value);

const deployment = loadFixture('deployment');
const pod = loadFixture('pod');
const service = loadFixture('service');
const namespace = loadFixture('namespace');
const node = loadFixture('node');

// The Deployment from the README's "index placeholders" example: four containers with ports.
const fourContainers: JsonObject = {
  kind: 'Deployment',
  spec: {
    template: {
      spec: {
        containers: [
          {
            name: 'c1',
            ports: [
              { containerPort: 100, name: 'abc' },
              { containerPort: 200, name: 'xyz' },
            ],
          },
          {
            name: 'c2',
            ports: [
              { containerPort: 100, name: 'abc' },
              { containerPort: 80, name: 'xyz' },
            ],
          },
          {
            name: 'c3',
            ports: [
              { containerPort: 100, name: 'abc' },
              { containerPort: 200, name: 'xyz' },
            ],
          },
          {
            name: 'c4',
            ports: [
              { containerPort: 80, name: 'abc' },
              { containerPort: 200, name: 'xyz' },
              { containerPort: 300, name: 'foo' },
            ],
          },
        ],
      },
    },
  },
};

// Containers with and without securityContext, for the README's isEmpty/isUndefined examples.
const securityPod: JsonObject = {
  kind: 'Deployment',
  spec: {
    template: {
      spec: {
        containers: [
          { name: 'none', image: 'repo-1/a:1' },
          { name: 'empty', image: 'their-repo/b:2', securityContext: {} },
          { name: 'set', image: 'their-repo/c:3', securityContext: { runAsNonRoot: true } },
        ],
      },
    },
  },
};

const doc: JsonObject = {
  a: { b: { c: 1 } },
  arr: [10, 20, 30, 40, 50],
  objs: [{ n: 'x', v: 1 }, { n: 'y', v: 2 }, { n: 'z' }],
  'dot.key': { 'sl/ash': 'v', 'ti~lde': 't' },
  nul: null,
  empty: { o: {}, a: [], s: '' },
  num: 80,
  str: '80',
  t: true,
  f: false,
  text: 'héllo',
  nested: [
    [1, 2],
    [3, 4],
  ],
};

describe('README selects on realistic fixtures', () => {
  const cases: Array<[string, JsonObject, Expected]> = [
    ['$.kind', deployment, [['Deployment', '/kind', []]]],
    ['$.kind', pod, [['Pod', '/kind', []]]],
    ['$.kind', service, [['Service', '/kind', []]]],
    ['$.metadata.labels.app', deployment, [['nginx', '/metadata/labels/app', []]]],
    [
      '$.spec.template.spec.containers[*].image',
      deployment,
      [
        ['nginx:1.14.2', '/spec/template/spec/containers/0/image', [0]],
        ['their-repo/log-shipper:2.1', '/spec/template/spec/containers/1/image', [1]],
      ],
    ],
    [
      '$.spec.template.spec.containers[*].name',
      deployment,
      [
        ['nginx', '/spec/template/spec/containers/0/name', [0]],
        ['log-shipper', '/spec/template/spec/containers/1/name', [1]],
      ],
    ],
    ['$.spec.template.spec.securityContext.runAsNonRoot == true', deployment, [[false, null, []]]],
    ["$.metadata.labels['app']", deployment, [['nginx', '/metadata/labels/app', []]]],
    ['$.metadata.labels["common.k8s.elastic.co/type"]', deployment, []],
    ['$.metadata.labels["app.kubernetes.io/component"]', deployment, []],
    ['$.metadata.annotations["sidecar.istio.io/inject"]', pod, []],
    ['$.metadata.annotations["my-inject-annotation"]', pod, []],
    [
      '$.metadata.annotations["ref.kubemod.io/inject-node-ref"]',
      pod,
      [['true', '/metadata/annotations/ref.kubemod.io~1inject-node-ref', []]],
    ],
    ['length($.spec.externalIPs) > 0', service, [[true, null, []]]],
    ['length($.spec.externalIPs) > 0', pod, [[false, null, []]]],
    [
      '$.spec.externalIPs[*]',
      service,
      [
        ['123.45.67.10', '/spec/externalIPs/0', [0]],
        ['23.45.67.89', '/spec/externalIPs/1', [1]],
      ],
    ],
    [
      '$.spec.template.spec.containers[? @.image =~ "nginx" ].ports[? @.containerPort == 80]',
      deployment,
      [[{ containerPort: 80, protocol: 'TCP' }, '/spec/template/spec/containers/0/ports/0', [0, 0]]],
    ],
    [
      '$.spec.template.spec.containers[*].ports[? @.containerPort == 80]',
      fourContainers,
      [
        [{ containerPort: 80, name: 'xyz' }, '/spec/template/spec/containers/1/ports/1', [1, 1]],
        [{ containerPort: 80, name: 'abc' }, '/spec/template/spec/containers/3/ports/0', [3, 0]],
      ],
    ],
    [
      '$.spec.template.spec.containers[*].ports[*].containerPort',
      deployment,
      [
        [80, '/spec/template/spec/containers/0/ports/0/containerPort', [0, 0]],
        [9100, '/spec/template/spec/containers/1/ports/0/containerPort', [1, 0]],
      ],
    ],
    [
      '$.spec.containers[? @.image =~ "their-repo/.+"].image',
      { spec: { containers: [{ image: 'their-repo/a:1' }, { image: 'nginx' }, { image: 'their-repo/b' }] } },
      [
        ['their-repo/a:1', '/spec/containers/0/image', [0]],
        ['their-repo/b', '/spec/containers/2/image', [2]],
      ],
    ],
    [
      '$.spec.template.spec.containers[? isEmpty(@.securityContext)]',
      securityPod,
      [
        [{ name: 'none', image: 'repo-1/a:1' }, '/spec/template/spec/containers/0', [0]],
        [
          { name: 'empty', image: 'their-repo/b:2', securityContext: {} },
          '/spec/template/spec/containers/1',
          [1],
        ],
      ],
    ],
    [
      '$.spec.template.spec.containers[? isUndefined(@.securityContext)]',
      securityPod,
      [[{ name: 'none', image: 'repo-1/a:1' }, '/spec/template/spec/containers/0', [0]]],
    ],
    [
      '$.spec.template.spec.containers[? isDefined(@.securityContext) && isEmpty(@.securityContext)]',
      securityPod,
      [
        [
          { name: 'empty', image: 'their-repo/b:2', securityContext: {} },
          '/spec/template/spec/containers/1',
          [1],
        ],
      ],
    ],
    [
      '$.syntheticRefs.namespace.metadata.labels.color',
      { syntheticRefs: { namespace } },
      [['blue', '/syntheticRefs/namespace/metadata/labels/color', []]],
    ],
    [
      '$.syntheticRefs.namespace.metadata.labels.flavor',
      { syntheticRefs: { namespace } },
      [['vanilla', '/syntheticRefs/namespace/metadata/labels/flavor', []]],
    ],
    [
      '$.syntheticRefs.node.metadata.labels',
      { syntheticRefs: { node } },
      [[(node.metadata as JsonObject).labels, '/syntheticRefs/node/metadata/labels', []]],
    ],
    [
      '$.spec.template.spec.containers[? @.image =~ "their-repo/.+"].image',
      deployment,
      [['their-repo/log-shipper:2.1', '/spec/template/spec/containers/1/image', [1]]],
    ],
    ['$.spec.replicas > 1 && $.kind == "Deployment"', deployment, [[true, null, []]]],
    ['length($.spec.template.spec.containers) > 1', deployment, [[true, null, []]]],
    ['length($.spec.containers) > 1', pod, [[false, null, []]]],
  ];
  test.each(cases)('%s', (select, object, expected) => {
    expect(triples(compileJsonPath(select).select(object))).toEqual(expected);
  });
});

describe('paths', () => {
  const cases: Array<[string, JsonValue[]]> = [
    ['$', [doc]],
    ['$.a.b.c', [1]],
    ['$.a.b', [{ c: 1 }]],
    ["$['a']['b']['c']", [1]],
    ['$["a"]["b"].c', [1]],
    ['$.arr[0]', [10]],
    ['$.arr[4]', [50]],
    ['$.arr[5]', []],
    ['$.arr[-1]', [50]],
    ['$.arr[-5]', [10]],
    ['$.arr[-6]', []],
    ['$.arr["1"]', [20]],
    ['$.arr[*]', [10, 20, 30, 40, 50]],
    ['$.arr.*', [10, 20, 30, 40, 50]],
    ['$.a.*', [{ c: 1 }]],
    ['$.a[*].c', [1]],
    ['$.arr[1:3]', [20, 30]],
    ['$.arr[:2]', [10, 20]],
    ['$.arr[3:]', [40, 50]],
    ['$.arr[-2:]', [40, 50]],
    ['$.arr[:-3]', [10, 20]],
    ['$.arr[1:-1]', [20, 30, 40]],
    ['$.arr[::2]', [10, 30, 50]],
    ['$.arr[1:4:2]', [20, 40]],
    ['$.arr[::-1]', [50, 40, 30, 20, 10]],
    ['$.arr[3:1]', []],
    ['$.arr[10:20]', []],
    ['$.arr[0,2,4]', [10, 30, 50]],
    ['$.arr[4,0]', [50, 10]],
    ['$.arr[0,9]', [10]],
    ['$.arr[-1,0]', [50, 10]],
    ["$['a','nul']", [{ b: { c: 1 } }, null]],
    ['$["a","missing","num"]', [{ b: { c: 1 } }, 80]],
    ['$.objs[*].n', ['x', 'y', 'z']],
    ['$.objs[*].v', [1, 2]],
    ['$.objs[1].n', ['y']],
    ['$.nested[*][0]', [1, 3]],
    ['$.nested[1][1]', [4]],
    ['$.nested[*][*]', [1, 2, 3, 4]],
    ['$["dot.key"]["sl/ash"]', ['v']],
    ["$['dot.key']['ti~lde']", ['t']],
    ['$.nul', [null]],
    ['$.nul.x', []],
    ['$.num.x', []],
    ['$.str[0]', []],
    ['$.missing', []],
    ['$.missing[*]', []],
    ['$.missing.deeper.still', []],
    ['$.num[*]', []],
    ['$.empty.a[*]', []],
    ['$.empty.o.*', []],
    ['$.t', [true]],
    ['$.f', [false]],
    ['$.a["constructor"]', []],
    ['$.a.__proto__', []],
    ['$.a.toString', []],
    ['@.a.b.c', [1]],
    ['($.a.b.c)', [1]],
    ['$.arr[(2)]', [30]],
    ['$.objs[(@.length)]', []],
    ['$.objs[-1].n', ['z']],
    ['$.objs[*][("n")]', ['x', 'y', 'z']],
    ['$.nested[*][(1)]', [2, 4]],
    ['$.nested[*][(-1)]', [2, 4]],
    ['$.nested[*][(@[0] - 1)]', [1]],
    ['$.objs[?(@.n == "x")]["v"]', [1]],
    ['$.arr[? @ > 10][*]', []],
    ['$..c', [1]],
    ['$.a..c', [1]],
    ['$..n', ['x', 'y', 'z']],
    ['$.nested..*', [[1, 2], [3, 4], 1, 2, 3, 4]],
    ['$..[?(@.v == 2)].n', ['y']],
    ['$..objs[0].n', ['x']],
  ];
  test.each(cases)('%s', (select, expected) => {
    expect(values(select, doc)).toEqual(expected);
  });
});

describe('result pointers and captured indices', () => {
  const cases: Array<[string, JsonValue, Expected]> = [
    ['$["dot.key"]["sl/ash"]', doc, [['v', '/dot.key/sl~1ash', []]]],
    ["$['dot.key']['ti~lde']", doc, [['t', '/dot.key/ti~0lde', []]]],
    [
      '$["dot.key"].*',
      doc,
      [
        ['v', '/dot.key/sl~1ash', ['sl/ash']],
        ['t', '/dot.key/ti~0lde', ['ti~lde']],
      ],
    ],
    ['$.arr[-1]', doc, [[50, '/arr/4', []]]],
    ['$.arr["1"]', doc, [[20, '/arr/1', []]]],
    [
      '$.arr[1:3]',
      doc,
      [
        [20, '/arr/1', [1]],
        [30, '/arr/2', [2]],
      ],
    ],
    [
      '$.arr[0,-1]',
      doc,
      [
        [10, '/arr/0', [0]],
        [50, '/arr/4', [4]],
      ],
    ],
    [
      "$['num','str']",
      doc,
      [
        [80, '/num', ['num']],
        ['80', '/str', ['str']],
      ],
    ],
    [
      '$.nested[*][*]',
      doc,
      [
        [1, '/nested/0/0', [0, 0]],
        [2, '/nested/0/1', [0, 1]],
        [3, '/nested/1/0', [1, 0]],
        [4, '/nested/1/1', [1, 1]],
      ],
    ],
    ['$.objs[? @.v > 1].n', doc, [['y', '/objs/1/n', [1]]]],
    ['$.a[? @.c == 1].c', doc, [[1, '/a/b/c', ['b']]]],
    ['$..c', doc, [[1, '/a/b/c', ['/a/b']]]],
    ['$.a..c', doc, [[1, '/a/b/c', ['/b']]]],
    ['$.a.b..c', doc, [[1, '/a/b/c', ['']]]],
    [
      '$.nested..[1]',
      doc,
      [
        [[3, 4], '/nested/1', ['']],
        [2, '/nested/0/1', ['/0']],
        [4, '/nested/1/1', ['/1']],
      ],
    ],
    [
      '$.objs[*]..v',
      doc,
      [
        [1, '/objs/0/v', [0, '']],
        [2, '/objs/1/v', [1, '']],
      ],
    ],
    ['$.empty', doc, [[{ o: {}, a: [], s: '' }, '/empty', []]]],
    ['$', 5, [[5, '', []]]],
    [
      '$.spec.template.spec.containers[*].ports[*]',
      fourContainers,
      triples(compileJsonPath('$.spec.template.spec.containers[*].ports[*]').select(fourContainers)),
    ],
  ];
  test.each(cases)('%s', (select, object, expected) => {
    expect(triples(compileJsonPath(select).select(object))).toEqual(expected);
  });

  test('nested wildcard indices over the README deployment follow document order', () => {
    const rs = compileJsonPath('$.spec.template.spec.containers[*].ports[*].name').select(fourContainers);
    expect(rs.map((r) => r.indices)).toEqual([
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
      [2, 0],
      [2, 1],
      [3, 0],
      [3, 1],
      [3, 2],
    ]);
    for (const r of rs)
      expect(r.path).toBe(`/spec/template/spec/containers/${r.indices[0]}/ports/${r.indices[1]}/name`);
  });
});

describe('undefined semantics (README "Value undefined")', () => {
  const cases: Array<[string, JsonValue[]]> = [
    ['$.a.b.x == 12', [false]],
    ['$.a.b.x != 12', [false]],
    ['$.a.b.x > 12', [false]],
    ['$.a.b.x < 12', [false]],
    ['$.a.b.x >= 12', [false]],
    ['$.a.b.x <= 12', [false]],
    ['$.a.b.x == true', [false]],
    ['$.a.b.x == false', [false]],
    ['$.a.b.x == $.a.b.y', [false]],
    ['$.a.b.x != $.a.b.y', [false]],
    ['$.a.b.x == null', [false]],
    ['$.a.b.x =~ "undefined"', [false]],
    ['$.a.b.x + 1 == 1', [false]],
    ['isUndefined($.a.b.x)', [true]],
    ['isDefined($.a.b.x)', [false]],
    ['isDefined($.a.b.c)', [true]],
    ['isDefined($.nul)', [true]],
    ['isUndefined($.nul)', [false]],
    ['isEmpty($.a.b.x)', [true]],
    ['isNotEmpty($.a.b.x)', [false]],
    ['length($.a.b.x)', [0]],
    ['length($.nul)', [0]],
    ['$.a.b.x', []],
    // && and || take booleans only: a non-boolean operand makes the whole select yield nothing.
    ['$.a.b.x && true', []],
    ['true && $.a.b.x', []],
    ['$.num && true', []],
    ['$.a.b.x || true', []],
    ['false && $.a.b.x', [false]],
    ['true || $.a.b.x', [true]],
    ['!$.a.b.x', []],
    ['!$.t', [false]],
    ['!($.a.b.x == 1)', [true]],
    ['!isDefined($.a.b.x)', [true]],
  ];
  test.each(cases)('%s', (select, expected) => {
    expect(values(select, doc)).toEqual(expected);
  });
});

describe('filters and functions', () => {
  const cases: Array<[string, JsonValue, JsonValue[]]> = [
    ['$.objs[?(@.v == 1)].n', doc, ['x']],
    ['$.objs[? @.v == 1].n', doc, ['x']],
    ['$.objs[? @.v != 1].n', doc, ['y']],
    ['$.objs[? @.v >= 1].n', doc, ['x', 'y']],
    ['$.objs[? isUndefined(@.v)].n', doc, ['z']],
    ['$.objs[? isDefined(@.v)].n', doc, ['x', 'y']],
    ['$.objs[? @.n == "y" || @.n == "z"].n', doc, ['y', 'z']],
    ['$.objs[? @.n == "y" && @.v == 2].n', doc, ['y']],
    ['$.objs[? !(@.n == "y")].n', doc, ['x', 'z']],
    ['$.objs[? @.v].n', doc, ['x', 'y']],
    ['$.objs[? @.n].n', doc, []],
    ['$.arr[? @ > 25]', doc, [30, 40, 50]],
    ['$.arr[? @ > 25 && @ < 45]', doc, [30, 40]],
    ['$.arr[? @ % 20 == 0]', doc, [20, 40]],
    ['$.arr[? @ == $.arr[-1]]', doc, [50]],
    ['$.arr[? @ * 2 == 60]', doc, [30]],
    ['$.arr[? @ / 10 == 4]', doc, [40]],
    ['$.arr[? @ - 5 == 5]', doc, [10]],
    ['$.arr[? -@ == -20]', doc, [20]],
    ['$.a[? @.c == 1]', doc, [{ c: 1 }]],
    ['$.objs[? length(@) == 2].n', doc, ['x', 'y']],
    ['$.objs[? length(@.n) == 1].n', doc, ['x', 'y', 'z']],
    ['$.empty[? isEmpty(@)]', doc, [{}, [], '']],
    ['$.empty[? isNotEmpty(@)]', doc, []],
    ['length($.empty.o)', doc, [0]],
    ['length($.arr)', doc, [5]],
    ['length($.a)', doc, [1]],
    ['length($.text)', doc, [6]],
    ['length($.arr[*])', doc, [5]],
    ['length($.objs[*].v)', doc, [2]],
    ['length($.num)', doc, []],
    ['isEmpty($.num)', doc, []],
    ['isEmpty($.empty.s)', doc, [true]],
    ['isEmpty($.nul)', doc, [true]],
    ['isNotEmpty($.arr)', doc, [true]],
    ['$.spec.template.spec.containers[? length(@.ports) > 2].name', fourContainers, ['c4']],
    ['$.spec.template.spec.containers[? @.ports[0].containerPort == 80].name', fourContainers, ['c4']],
    ['$.spec.template.spec.containers[? @.ports[-1].containerPort == 300].name', fourContainers, ['c4']],
    [
      '$.spec.template.spec.containers[? $.kind == "Deployment"].name',
      fourContainers,
      ['c1', 'c2', 'c3', 'c4'],
    ],
    ['$.spec.template.spec.containers[? @.ports[?(@.containerPort == 80)]].name', fourContainers, []],
    [
      '$.spec.template.spec.containers[? length(@.ports[? @.containerPort == 80]) > 0].name',
      fourContainers,
      ['c2', 'c4'],
    ],
    [
      '$.spec.template.spec.containers[? @.name == "c1" || @.name == "c3"].ports[? @.name == "xyz"].containerPort',
      fourContainers,
      [200, 200],
    ],
    ['$.spec.template.spec.containers[? (@.name == "c2")].name', fourContainers, ['c2']],
  ];
  test.each(cases)('%s', (select, object, expected) => {
    expect(values(select, object)).toEqual(expected);
  });
});

describe('regex filters (RE2, Go semantics, unanchored)', () => {
  const images = {
    spec: {
      containers: ['nginx:1.14.2', 'NGINX:1.15', 'their-repo/log:2', 'docker.io/library/nginx'].map(
        (image, i) => ({ name: `c${i}`, image }),
      ),
    },
  };
  const cases: Array<[string, JsonValue[]]> = [
    ['$.spec.containers[? @.image =~ "nginx"].name', ['c0', 'c3']],
    ['$.spec.containers[? @.image =~ "(?i)nginx"].name', ['c0', 'c1', 'c3']],
    ['$.spec.containers[? @.image =~ "^nginx"].name', ['c0']],
    ['$.spec.containers[? @.image =~ "nginx:1\\\\.14\\\\..*"].name', ['c0']],
    ["$.spec.containers[? @.image =~ 'their-repo/.+'].name", ['c2']],
    ['$.spec.containers[? @.image !~ "nginx"].name', ['c1', 'c2']],
    ['$.spec.containers[? @.missing =~ ".*"].name', []],
    ['$.spec.containers[? @.image =~ @.name].name', []],
    ['$.spec.containers[? @.name =~ "c[13]"].name', ['c1', 'c3']],
    ['$.spec.containers[? @.image =~ "their-repo/log"].name', ['c2']],
    ['$.spec.containers[? @.image =~ "library/nginx"].name', ['c3']],
    ['$.spec.containers[? @.image =~ ""].name', ['c0', 'c1', 'c2', 'c3']],
    ['$.spec.containers[? @.image =~ "NGINX"].name', ['c1']],
    ['$.spec.containers[? @.image =~ "nginx:1.1"].name', ['c0']],
    ['$.spec.containers[? @.image =~ ("ngi" + "nx")].name', ['c0', 'c3']],
    ['$.spec.containers[? @.image =~ $.pattern].name', []],
  ];
  test.each(cases)('%s', (select, expected) => {
    expect(values(select, images)).toEqual(expected);
  });

  test('a numeric field is matched through its Go text form', () => {
    expect(
      values('$.spec.template.spec.containers[*].ports[? @.containerPort =~ "^80$"].name', fourContainers),
    ).toEqual(['xyz', 'abc']);
  });

  test('a dynamic pattern that is not valid RE2 makes the element not match', () => {
    expect(
      values('$.items[? @.a =~ @.p].a', {
        items: [
          { a: 'x', p: '(' },
          { a: 'y', p: 'y' },
        ],
      }),
    ).toEqual(['y']);
  });
});

describe('type coercion (gval: numeric conversion, then bool conversion, then deep equality)', () => {
  const cases: Array<[string, JsonValue[]]> = [
    ['$.num == 80', [true]],
    ['$.num == "80"', [true]],
    ['$.str == 80', [true]],
    ['$.str == "80.0"', [true]],
    ['$.str != 80', [false]],
    ['$.num == "eighty"', [false]],
    ['$.num != "eighty"', [true]],
    ['$.t == true', [true]],
    ['$.t == "true"', [true]],
    ['$.f == false', [true]],
    ['$.t == 1', [true]],
    ['$.f == 0', [true]],
    ['$.t == "yes"', [false]],
    ['$.nul == null', [true]],
    ['$.nul == 0', [false]],
    ['$.nul != null', [false]],
    ['$.a == $.a', [true]],
    ['$.objs[0] == $.objs[1]', [false]],
    ['$.empty.a == $.empty.a', [true]],
    ['$.arr[*] == 10', [false]],
    ['"abc" == "abc"', [true]],
    ['"abc" < "abd"', [true]],
    ['"10" > 9', [true]],
    ['"10" > "9"', [false]], // two strings compare as text, as in gval
    ['$.str >= 80', [true]],
    ['"b" > 1', [true]],
    ['1 + 2', [3]],
    ['"a" + "b"', ['ab']],
    ['"a" + 1', ['a1']],
    ['"1" + 1', [2]],
    ['2 * 3 + 4', [10]],
    ['2 * (3 + 4)', [14]],
    ['10 - 2 - 3', [5]],
    ['-$.num', [-80]],
    ['-"x"', []],
    ['1 / 0', []],
    ['"x" * 2', []],
    ['true', [true]],
    ['null', [null]],
    ['nil == null', [true]],
    ['\'single\' == "single"', [true]],
    ['"tab\\there"', ['tab\there']],
    ['"\\u00e9" == "é"', [true]],
    ['`raw\\n`', ['raw\\n']],
    ['1.5e1 == 15', [true]],
    ['1 < 2 == true', [true]],
  ];
  test.each(cases)('%s', (select, expected) => {
    expect(values(select, doc)).toEqual(expected);
  });
});

describe('syntax errors name the column and what was expected', () => {
  const cases: Array<[string, number, string]> = [
    ['', 1, 'a JSONPath expression'],
    ['$.', 3, "a property name or '*' after '.'"],
    ['$.a[', 5, "a quoted name, an index, '*', '?' or a slice after '['"],
    ['$.a[0', 6, "']'"],
    ['$.metadata.labels["app', 23, 'closing "'],
    ['$.spec.template.spec.containers[? @.image == "x"', 49, "']'"],
    ['$.a[?(@.x == 1]', 15, "')'"],
    ['$..', 4, "a property name, '*', '[' or '(' after '..'"],
    ['$.a ==', 7, 'a path ($ or @), a value or a function call'],
    ['$.a $.b', 5, 'an operator or end of input'],
    [
      'foo($.a)',
      1,
      'a path ($ or @), a value or one of the functions isDefined, isUndefined, isEmpty, isNotEmpty, length, imageRegistry, imageRepository, imageTag, imageDigest',
    ],
    ['length($.a, $.b)', 16, 'exactly 1 argument to length()'],
    ['length()', 8, 'exactly 1 argument to length()'],
    ['$.a[1,@.b]', 7, 'a quoted name or an integer (union member)'],
    ['$.a[1:"x"]', 7, 'an integer slice bound'],
    ['$.a[1:2:3:4]', 10, "']'"],
    ['$.a =~ "("', 8, 'a valid RE2 regular expression'],
    ['$.a # 1', 5, 'a path, value or operator'],
    ['"\\q"', 2, 'a valid escape sequence'],
    ['$.0', 3, "a property name or '*' after '.'"],
    ['$.a[*', 6, "']'"],
    ['($.a', 5, "')'"],
    ['$.a = 1', 5, 'a path, value or operator'],
  ];
  test.each(cases)('%j', (select, column, expected) => {
    let error: unknown;
    try {
      compileJsonPath(select);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(JsonPathSyntaxError);
    const e = error as JsonPathSyntaxError;
    expect(e.expected).toBe(expected);
    expect(e.column).toBe(column);
    expect(e.message).toMatch(new RegExp(`^column ${column}: expected `));
  });

  test('message reads "column N: expected X but found Y"', () => {
    expect(() => compileJsonPath('$.metadata.name[')).toThrow(
      "column 17: expected a quoted name, an index, '*', '?' or a slice after '[' but found end of input",
    );
  });
});

describe('script selectors: (expr) maps each selected value, @ = that value (KubeMod parse.go parseScript)', () => {
  const containers = '$.spec.template.spec.containers';
  test('after a wildcard: one computed result per element, capturing the wildcard index, no pointer', () => {
    const names = triples(compileJsonPath(`${containers}[*].name`).select(deployment));
    expect(names.length).toBeGreaterThan(1);
    expect(triples(compileJsonPath(`${containers}[*].name(@ == "nginx")`).select(deployment))).toEqual(
      names.map(([v, , ix]) => [v === 'nginx', null, ix]),
    );
    expect(values(`${containers}[*](@.name)`, deployment)).toEqual(
      values(`${containers}[*].name`, deployment),
    );
  });

  test('after `..` the script sees every node (pre-order), and later steps continue from its value', () => {
    const doc: JsonValue = [
      { key: 'x', value: 'a' },
      { key: 'y', value: 'b' },
    ];
    expect(values('$..(@ == "a")', doc)).toEqual([false, false, false, true, false, false, false]);
    expect(values('$..["key"](@ == "y")', doc)).toEqual([false, true]);
    expect(triples(compileJsonPath('$.*(@).key').select(doc))).toEqual([
      ['x', null, [0]],
      ['y', null, [1]],
    ]);
    expect(values('$(@[1]).value', doc)).toEqual(['b']);
  });

  test('undefined and failing scripts drop that value; a definite path with a script yields one result', () => {
    expect(values(`${containers}[*](@.missing)`, deployment)).toEqual([]);
    expect(values(`${containers}[*](@.name && true)`, deployment)).toEqual([]);
    expect(values('$.metadata(@.name == "nginx")', deployment)).toEqual([true]);
    expect(values('$.metadata.name(@ + "-x")', deployment)).toEqual(['nginx-x']);
  });

  test('inside expressions and filters', () => {
    expect(values(`length(${containers}[*](@.image))`, deployment)).toEqual([
      values(`${containers}[*].image`, deployment).length,
    ]);
    expect(values('$.metadata(@.name && true) == true', deployment)).toEqual([]);
    expect(values(`${containers}[? @(@.name == "nginx")].name`, deployment)).toEqual(['nginx']);
  });

  test('syntax: the script must close; nesting counts towards the depth limit', () => {
    expect(() => compileJsonPath('$.a(@ == 1')).toThrow("column 11: expected ')' but found end of input");
    expect(() => compileJsonPath('$.a()')).toThrow(JsonPathSyntaxError);
    expect(() => compileJsonPath('$' + '(@'.repeat(MAX_DEPTH + 1) + ')'.repeat(MAX_DEPTH + 1))).toThrow(
      /levels of nesting/,
    );
  });

  test('script applications count towards the visit budget', () => {
    // 800 x 800: the walk alone stays under MAX_VISITS (640,800 visits); one script per element goes over.
    const square: JsonValue = Array.from({ length: 800 }, () => Array.from({ length: 800 }, () => 1));
    expect(values('length($[*][*]) > 0', square)).toEqual([true]);
    expect(() => compileJsonPath('length($[*][*](@)) > 0').select(square)).toThrow(/visited more than/);
  });
});

describe('limits against hostile selects and objects', () => {
  test('a select longer than the limit is rejected', () => {
    expect(() => compileJsonPath('$' + '.a'.repeat(MAX_SOURCE_LENGTH))).toThrow(JsonPathSyntaxError);
  });

  test('deep nesting is rejected before it can exhaust the stack', () => {
    const deep = '('.repeat(MAX_DEPTH + 1) + '1' + ')'.repeat(MAX_DEPTH + 1);
    expect(() => compileJsonPath(deep)).toThrow(/levels of nesting/);
    const ok = '('.repeat(MAX_DEPTH - 1) + '1' + ')'.repeat(MAX_DEPTH - 1);
    expect(compileJsonPath(ok).select({})).toEqual([{ value: 1, path: null, indices: [] }]);
    expect(() => compileJsonPath('!'.repeat(2000) + 'true')).toThrow(JsonPathSyntaxError);
  });

  const chain = (depth: number): JsonValue => {
    let v: JsonValue = { leaf: 1 };
    for (let i = 0; i < depth; i++) v = { x: v };
    return v;
  };

  test('chained recursive descents over a big object stop at the visit budget with a clear error', () => {
    const big: JsonValue[] = Array.from({ length: 100 }, () => chain(300));
    expect(() => compileJsonPath('$..*..*').select(big)).toThrow(JsonPathLimitError);
    expect(() => compileJsonPath('$..*..*').select(big)).toThrow(/yielded more than 10000 results/);
    expect(() => compileJsonPath('length($..*..*) > 0').select(big)).toThrow(
      /visited more than 1000000 nodes/,
    );
    // The same select on a realistic object is fine.
    expect(compileJsonPath('$..*..*').select(deployment).length).toBeGreaterThan(100);
  });

  test('recursive descent into a very deep object fails clearly instead of overflowing the stack', () => {
    expect(compileJsonPath('$..leaf').select(chain(MAX_DESCENT_DEPTH - 1))).toEqual([
      {
        value: 1,
        path: '/x'.repeat(MAX_DESCENT_DEPTH - 1) + '/leaf',
        indices: ['/x'.repeat(MAX_DESCENT_DEPTH - 1)],
      },
    ]);
    expect(() => compileJsonPath('$..leaf').select(chain(5000))).toThrow(JsonPathLimitError);
  });
});

test('compiling once and selecting many objects gives independent results', () => {
  const p = compileJsonPath('$.metadata.name');
  expect(p.source).toBe('$.metadata.name');
  expect(p.ast.kind).toBe('path');
  expect(p.select(deployment)[0].value).toBe('nginx');
  expect(p.select(pod)[0].value).toBe('nginx-7c79c4bf97-x2x5k');
  expect(p.select(null)).toEqual([]);
  expect(p.select('string')).toEqual([]);
});
