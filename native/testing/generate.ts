import { JsonObject, JsonValue } from '../../util/json';

/*
 * A fuzz-style generator of small ModRules and objects for the compiler: rules built from the features the compiler
 * handles (and a few it refuses), objects of every JSON type at the paths the rules read. The unit tests check the
 * compiler's own invariants on them; the e2e suite sends them through the real API server, native against webhook
 * (CEL's semantics are only ever checked there, never against a mock).
 */

/** A small deterministic PRNG (mulberry32), so a failing case can be replayed from its seed. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** The kind generated objects have: a custom resource whose spec keeps any JSON (e2e installs its CRD). */
export const FUZZ_API_VERSION = 'fuzz.modrule.io/v1';
export const FUZZ_KIND = 'FuzzMap';

const STRINGS = [
  'a',
  'b',
  'nginx:1.14.2',
  'docker.io/x:1',
  '',
  'true',
  '123',
  'Yes',
  'a b',
  'x:y',
  'ns-1',
  'é',
];
const NUMBERS = [0, 1, 80, 1.5, -3, 999999, 1000000, 2.0e6];
const REGEXES = ['^a', 'nginx', '\\d+', '^$', '(?i)yes', 'docker\\.io/', '^[a-z]+$', ':'];

function scalar(r: Random): JsonValue {
  switch (r.int(5)) {
    case 0:
    case 1:
      return r.pick(STRINGS);
    case 2:
      return r.pick(NUMBERS);
    case 3:
      return r.chance(0.5);
    default:
      return r.chance(0.3) ? null : r.pick(STRINGS);
  }
}

function item(r: Random): JsonValue {
  if (r.chance(0.15)) return scalar(r);
  const out: JsonObject = {};
  if (r.chance(0.9)) out.name = r.chance(0.8) ? r.pick(['web', 'side', 'my-sidecar', 'a']) : scalar(r);
  if (r.chance(0.7)) out.image = r.chance(0.8) ? r.pick(STRINGS.slice(0, 4)) : scalar(r);
  if (r.chance(0.5)) out.flag = r.chance(0.8) ? r.chance(0.5) : scalar(r);
  if (r.chance(0.4)) out.port = r.chance(0.8) ? r.pick([80, 8080, 443]) : scalar(r);
  if (r.chance(0.3)) out.extra = r.chance(0.5) ? {} : { k: scalar(r) };
  return out;
}

/** An object of the fuzz kind with values of every JSON type where the rules look. */
export function generateObject(r: Random, name: string): JsonObject {
  const spec: JsonObject = {};
  if (r.chance(0.8)) spec.a = scalar(r);
  if (r.chance(0.5)) spec.b = r.chance(0.7) ? { c: scalar(r) } : scalar(r);
  if (r.chance(0.4)) spec.c = scalar(r);
  if (r.chance(0.6)) spec.n = r.chance(0.8) ? r.pick(NUMBERS) : scalar(r);
  if (r.chance(0.5)) spec.flag = r.chance(0.8) ? r.chance(0.5) : scalar(r);
  if (r.chance(0.7)) spec.items = Array.from({ length: r.int(4) }, () => item(r));
  if (r.chance(0.4)) spec.tags = Array.from({ length: r.int(3) }, () => scalar(r));
  const labels: JsonObject = {};
  if (r.chance(0.6)) labels.app = r.pick(['a', 'b', 'web']);
  if (r.chance(0.3)) labels.tier = r.pick(['batch', '123', 'true']);
  const meta: JsonObject = { name };
  if (Object.keys(labels).length > 0) meta.labels = labels;
  if (r.chance(0.3)) meta.annotations = { note: r.pick(['x', 'true', '']) };
  return { apiVersion: FUZZ_API_VERSION, kind: FUZZ_KIND, metadata: meta, spec };
}

const DEFINITE = [
  '$.spec.a',
  '$.spec.b.c',
  '$.spec.c',
  '$.spec.n',
  '$.spec.flag',
  '$.metadata.labels.app',
  '$.spec.tags',
  '$.spec.items[0].name',
  '$.spec.b',
];
const ITERATED = [
  '$.spec.items[*].name',
  '$.spec.items[*].image',
  '$.spec.tags[*]',
  '$.spec.items[? @.flag == true].image',
  '$.spec.items[? isEmpty(@.image)].name',
  '$.spec.items[? @.image =~ "nginx"].port',
  '$.spec.items[? @.port > 100 || !isDefined(@.flag)].name',
  '$.spec.items[? @.flag].name',
];
const BOOLEAN = [
  '$.spec.a == "a"',
  '$.spec.n > 3',
  '$.spec.n == 80',
  'length($.spec.items) > 1',
  'isEmpty($.spec.b)',
  '$.spec.flag == true',
  '!isDefined($.spec.c)',
  '$.spec.a =~ "^a"',
  '$.spec.n in [1, 80]',
  'isNotEmpty($.spec.tags) && $.spec.a != "b"',
  '$.spec.flag == false || isUndefined($.spec.flag)',
];
// Refused by the compiler, with a reason: kept so the tests see the reasons too.
const REFUSED = [
  '$.spec.items[*].extra[*]',
  '$..name',
  '$.spec.items[-1].name',
  '$.spec.a == "1"',
  '$.syntheticRefs.node.metadata.name',
];

function matchItem(r: Random): JsonObject {
  const kind = r.int(10);
  const select =
    kind < 4 ? r.pick(DEFINITE) : kind < 7 ? r.pick(ITERATED) : kind < 9 ? r.pick(BOOLEAN) : r.pick(REFUSED);
  const out: JsonObject = { select };
  const cmp = r.int(4);
  if (cmp === 1) out.matchValue = r.pick([...STRINGS, '80', '1e+06', '<nil>', 'false']);
  if (cmp === 2) out.matchValues = [r.pick(STRINGS), r.pick(['80', 'true', 'web'])];
  if (cmp === 3) out.matchRegex = r.pick(REGEXES);
  if (r.chance(0.3)) out.negate = true;
  if (r.chance(0.3)) out.matchFor = 'All';
  return out;
}

const VALUES = [
  'yes',
  '"quoted"',
  '8080',
  'true',
  '{x: 1, y: [a, b]}',
  '{{ .Target.spec.a }}',
  '"{{ .Target.metadata.name }}"',
  '{{ .Namespace }}',
  'v-{{ .Target.metadata.labels.app }}',
];

function patchOperation(r: Random, index: number): JsonObject {
  switch (r.int(7)) {
    case 0:
      return {
        op: 'add',
        path: `/metadata/labels/fuzz-${index}`,
        value: r.pick(VALUES.filter((v) => !v.startsWith('{x'))),
      };
    case 1:
      return { op: 'add', path: `/spec/added${index}/deep`, value: r.pick(VALUES) };
    case 2:
      return {
        op: 'replace',
        path: '/spec/a',
        value: r.pick(['replaced', '"7"', '{{ .Target.metadata.name }}']),
      };
    case 3:
      return { op: 'remove', path: r.pick(['/spec/c', '/spec/b/c', '/metadata/annotations/note']) };
    case 4:
      return {
        op: 'add',
        select: r.pick([
          '$.spec.items[? @.flag == true]',
          '$.spec.items[*]',
          '$.spec.items[? isEmpty(@.extra)]',
        ]),
        path: `/spec/items/#0/${r.pick(['marked', 'extra'])}`,
        value: r.pick(['"yes"', '{k: v}']),
      };
    case 5:
      return {
        op: 'replace',
        select: '$.spec.items[? @.image =~ "^docker"].image',
        path: '/spec/items/#0/image',
        value: '{{ .SelectedItem | replace "docker.io/" "registry.internal/" }}',
      };
    default:
      return { op: 'add', path: '/spec/tags/-', value: 'appended' };
  }
}

/** A rule over the fuzz kind: Patch or Reject, one to three criteria, one or two operations. */
export function generateRule(r: Random, name: string, namespace = 'default'): JsonObject {
  const reject = r.chance(0.35);
  const match = [
    { select: '$.kind', matchValue: FUZZ_KIND },
    ...Array.from({ length: 1 + r.int(3) }, () => matchItem(r)),
  ];
  const spec: JsonObject = { type: reject ? 'Reject' : 'Patch', match };
  if (reject) {
    if (r.chance(0.7))
      spec.rejectMessage = r.pick([
        'no',
        'bad {{ .Target.metadata.name }}',
        'a={{ .Target.spec.a }}',
        'tags {{ .Target.spec.tags }}',
        '{{ index .Target.metadata.labels "app" }}',
      ]);
    if (r.chance(0.2)) spec.admissionOperations = ['CREATE', 'UPDATE', 'DELETE'];
  } else {
    spec.patch = Array.from({ length: 1 + r.int(2) }, (_, i) => patchOperation(r, i));
  }
  if (r.chance(0.2)) spec.admissionOperations ??= [r.pick(['CREATE', 'UPDATE'])];
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}
