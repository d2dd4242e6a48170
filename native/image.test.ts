import { JsonObject } from '../util/json';
import { loadFixture } from '../fixtures/load';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { compileNative } from '.';
import { celImagePart, celWithRegistry, imagePart, maxReferenceFor } from './image';

function rule(spec: JsonObject): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'images', namespace: 'apps' },
    spec,
  });
  if (!compiled) throw new Error(JSON.stringify(problems));
  return compiled;
}

const POD = { select: '$.kind', matchValue: 'Pod' };

describe('image functions in native policies', () => {
  it('compiles a Docker Hub mirror rewrite over one container list, guarded to well-formed references', () => {
    const fit = compileNative(
      rule({
        type: 'Patch',
        match: [POD],
        patch: [
          {
            op: 'replace',
            select: '$.spec.containers[? imageRegistry(@.image) == "docker.io"].image',
            path: '/spec/containers/#0/image',
            value: '{{ imageWithRegistry "mirror.example.com" .SelectedItem }}',
          },
        ],
      }),
    );
    expect(fit.fits).toBe(true);
    if (!fit.fits) return;
    const patch = JSON.stringify(fit.policy.spec);
    expect(patch).toContain('mirror.example.com/');
    expect(patch).toContain('index.docker.io');
    const pod = loadFixture('pod');
    expect(fit.guards.holds(pod)).toBe(true);
    const odd = loadFixture('pod');
    ((odd.spec as JsonObject).containers as JsonObject[])[0].image = 'Not A Reference';
    // The engine leaves that container alone (undefined registry): the webhook keeps the object.
    expect(fit.guards.holds(odd)).toBe(false);
  });

  it('compiles a Reject of :latest and untagged images', () => {
    const fit = compileNative(
      rule({
        type: 'Reject',
        rejectMessage: 'pin your images',
        match: [POD, { select: '$.spec.containers[? imageTag(@.image) == "latest"]' }],
      }),
    );
    expect(fit.fits).toBe(true);
  });

  it('stays on the webhook with a reason where there is no CEL form', () => {
    const union = compileNative(
      rule({
        type: 'Patch',
        match: [POD],
        patch: [
          {
            op: 'replace',
            select: '$.spec["initContainers","containers"][? imageRegistry(@.image) == "docker.io"].image',
            path: '/spec/#0/#1/image',
            value: '{{ imageWithRegistry "mirror.example.com" .SelectedItem }}',
          },
        ],
      }),
    );
    expect(union.fits).toBe(false);
    if (!union.fits) expect(union.reasons[0].message).toMatch(/union|wildcard or filter/);
    const computed = compileNative(
      rule({
        type: 'Patch',
        match: [POD],
        patch: [
          { op: 'add', path: '/metadata/labels/x', value: '{{ imageWithRegistry .Namespace "nginx" }}' },
        ],
      }),
    );
    expect(computed.fits).toBe(false);
  });

  it('writes CEL that binds each step once and the same parts on the JSON side', () => {
    expect(celImagePart('imageDigest', 'v')).toBe(
      '[v].map(imgS, (imgS.indexOf("@") >= 0 ? imgS.substring(imgS.indexOf("@") + 1) : ""))[0]',
    );
    expect(celWithRegistry('m.io/', 'v')).toContain('"m.io/" + ');
    expect(imagePart('imageRepository', 'nginx')).toBe('library/nginx');
    expect(imagePart('imageWithRegistry', 'nginx:1', 'm.io')).toBe('m.io/library/nginx:1');
    expect(maxReferenceFor('mirror.example.com')).toBe(200);
    expect(maxReferenceFor('m.io/' + 'p'.repeat(100))).toBe(141);
  });
});
