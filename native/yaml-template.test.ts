import { JsonObject } from '../util/json';
import { analyzeModRule } from '../rule/compile';
import { RuleStore } from '../store/rules';
import { admit } from '../engine/admit';
import { compileNative } from '.';

/*
 * Patch values whose template builds YAML (KubeMod's sidecar example), and removal of a list element: both compile
 * only with guards that keep them exact and idempotent. The CEL itself is proven on the API server by the
 * differential e2e test (sidecar-injection, pvc-owner-reference); here what the compiler decides.
 */

function compile(spec: JsonObject) {
  const rule = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace: 'apps' },
    spec,
  }).rule!;
  return compileNative(rule);
}

const DEPLOYMENT = { select: '$.kind', matchValue: 'Deployment' };
const NO_SIDECAR = { select: '$.spec.template.spec.containers[*].name', matchValue: 'sidecar', negate: true };
const sidecar = (value: string) => ({
  type: 'Patch',
  match: [DEPLOYMENT, NO_SIDECAR],
  patch: [{ op: 'add', path: '/spec/template/spec/containers/-1', value }],
});

const deployment = (name: string, spec: JsonObject = {}): JsonObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'apps' },
  spec: { template: { spec: { containers: [{ name: 'web', image: 'nginx' }] } }, ...spec },
});

function engine(spec: JsonObject, object: JsonObject): JsonObject {
  const store = new RuleStore();
  store.upsertRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace: 'apps' },
    spec,
  });
  const out = admit({ operation: 'CREATE', object, oldObject: null, namespace: 'apps' }, store.snapshot());
  return out.object as JsonObject;
}

describe('templated YAML values', () => {
  const value = [
    'name: sidecar',
    'image: example/sidecar:1',
    'args:',
    '  - --tags=deployment.name={{ .Target.metadata.name }},pod.namespace={{ .Namespace }},x=${X:}',
  ].join('\n');

  test('compile, with guards that the printed values are inert, and the append is idempotent by its name', () => {
    const n = compile(sidecar(value));
    if (!n.fits) throw new Error(JSON.stringify(n.reasons));
    const whats = n.guards.list.map((g) => g.what);
    expect(whats).toContain('values printed into YAML are letters, digits, ".", "_" or "-"');
    expect(n.guards.holds(deployment('web-1'))).toBe(true);
    // A printed value that could change how the text parses (a space, a colon, a quote) leaves it to the webhook.
    expect(n.guards.holds(deployment('web: x'))).toBe(false);
    // Applying the rule to its own result changes nothing (the negated criterion sees the appended name).
    const once = engine(sidecar(value), deployment('web-1'));
    expect(engine(sidecar(value), once)).toEqual(once);
  });

  test('a scalar that is a printed value alone must read as a plain string', () => {
    const n = compile(sidecar('name: sidecar\nimage: {{ .Target.spec.image }}'));
    if (!n.fits) throw new Error(JSON.stringify(n.reasons));
    expect(n.guards.list.map((g) => g.what)).toContain('a YAML scalar with printed values reads as a string');
    expect(n.guards.holds(deployment('d', { image: 'nginx' }))).toBe(true);
    for (const image of ['true', '80', 'null', '1e3', '2001-12-14', ''])
      expect([image, n.guards.holds(deployment('d', { image }))]).toEqual([image, false]);
  });

  test('printed values in a key, at the start of a line, or only in a comment do not compile', () => {
    for (const bad of [
      'name: sidecar\n{{ .Target.metadata.name }}: x',
      '{{ .Target.metadata.name }}\n',
      'name: sidecar # {{ .Target.metadata.name }}',
    ]) {
      const n = compile(sidecar(bad));
      expect([bad, n.fits]).toEqual([bad, false]);
    }
  });

  test('an append whose templated value has no constant field the criteria look for is not idempotent', () => {
    const n = compile(sidecar('name: "{{ .Target.metadata.name }}-sidecar"\nimage: x'));
    expect(n.fits).toBe(false);
    if (!n.fits) expect(n.reasons[0].message).toMatch(/not idempotent/);
  });
});

describe('removing a list element', () => {
  const spec = {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'PersistentVolumeClaim' }],
    patch: [{ op: 'remove', path: '/metadata/ownerReferences/0' }],
  };
  const claim = (owners: number): JsonObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: 'c',
      namespace: 'apps',
      ownerReferences: Array.from({ length: owners }, (_, i) => ({ kind: 'X', name: `o${i}` })),
    },
  });

  test('compiles where the list has at most that many elements; longer lists stay with the webhook', () => {
    const n = compileNative(
      analyzeModRule({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'r', namespace: 'apps' },
        spec,
      }).rule!,
    );
    if (!n.fits) throw new Error(JSON.stringify(n.reasons));
    expect(n.guards.holds(claim(0))).toBe(true);
    expect(n.guards.holds(claim(1))).toBe(true);
    expect(n.guards.holds(claim(2))).toBe(false);
    // Where the guard holds, twice is once (the second remove finds no element); where not, it would differ.
    const once = engine(spec, claim(1));
    expect(engine(spec, once)).toEqual(once);
    const two = engine(spec, claim(2));
    expect(engine(spec, two)).not.toEqual(two);
  });
});
