import fc from 'fast-check';
import { compileRegex } from './regex';
import {
  CEL_REFERENCE_MAX,
  CEL_REFERENCE_PATTERN,
  effectiveTag,
  imageReferenceOf,
  parseImageReference,
  withRegistry,
} from './image-reference';

const SHA = 'sha256:' + 'a'.repeat(40) + '0123456789abcdef01234567';

describe('image references as the runtimes read them', () => {
  // The table: registry, repository, tag (as a runtime pulls it), digest.
  it.each([
    ['nginx:1.25', 'docker.io', 'library/nginx', '1.25', ''],
    [`docker.io/bitnami/redis@${SHA}`, 'docker.io', 'bitnami/redis', '', SHA],
    ['quay.io/prometheus/node-exporter:v1.8.0', 'quay.io', 'prometheus/node-exporter', 'v1.8.0', ''],
    ['localhost:5000/app:dev', 'localhost:5000', 'app', 'dev', ''],
    ['registry.k8s.io/pause:3.9', 'registry.k8s.io', 'pause', '3.9', ''],
    ['library/busybox', 'docker.io', 'library/busybox', 'latest', ''],
    [`nginx:1.25@${SHA}`, 'docker.io', 'library/nginx', '1.25', SHA],
  ])('%s', (image, registry, repository, tag, digest) => {
    const ref = parseImageReference(image);
    expect([ref.registry, ref.repository, effectiveTag(ref), ref.digest]).toEqual([
      registry,
      repository,
      tag,
      digest,
    ]);
  });

  it.each([
    ['index.docker.io/nginx', 'docker.io', 'library/nginx'],
    ['docker.io/nginx', 'docker.io', 'library/nginx'],
    ['localhost/app', 'localhost', 'app'],
    ['localhost:5000', 'docker.io', 'library/localhost'], // one element: a name with tag 5000, as docker reads it
    ['Registry/app', 'Registry', 'app'], // upper case: only a registry can be
    ['myorg/app', 'docker.io', 'myorg/app'],
    ['[::1]:5000/app', '[::1]:5000', 'app'],
    ['10.0.0.1:5000/a/b/c', '10.0.0.1:5000', 'a/b/c'],
  ])('%s is %s %s', (image, registry, repository) => {
    const ref = parseImageReference(image);
    expect([ref.registry, ref.repository]).toEqual([registry, repository]);
  });

  it('keeps the tag as written, and a digest alone has none', () => {
    expect(parseImageReference('nginx').tag).toBe('');
    expect(effectiveTag(parseImageReference('nginx'))).toBe('latest');
    expect(effectiveTag(parseImageReference(`nginx@${SHA}`))).toBe('');
    expect(parseImageReference('localhost:5000').tag).toBe('5000');
  });

  it.each([
    ['', 'invalid reference format'],
    ['nginx:', 'invalid reference format'],
    ['Nginx', 'must be lowercase'],
    ['myorg/App', 'must be lowercase'],
    ['a'.repeat(64).replace(/a/g, 'b'), 'image ID'],
    ['nginx@sha256:abc', 'invalid reference format'],
    [`nginx@md5:${'a'.repeat(32)}`, 'unsupported digest algorithm md5'],
    [`nginx@sha256:${'A'.repeat(64)}`, 'lower-case hexadecimal'],
    [`nginx@sha256:${'a'.repeat(63)}`, 'lower-case hexadecimal'],
    ['registry.example.com:port/app', 'invalid reference format'],
    [`quay.io/${'a'.repeat(250)}`, 'not be more than 255'],
    ['nginx :1', 'invalid reference format'],
    ['a//b', 'invalid reference format'],
  ])('refuses %j (%s)', (image, reason) => {
    expect(() => parseImageReference(image)).toThrow(reason);
    expect(imageReferenceOf(image)).toBeUndefined();
  });
});

describe('withRegistry', () => {
  it.each([
    ['mirror.example.com', 'nginx:1.25', 'mirror.example.com/library/nginx:1.25'],
    ['mirror.example.com', 'docker.io/bitnami/redis@' + SHA, `mirror.example.com/bitnami/redis@${SHA}`],
    ['mirror.example.com:5000', `nginx:1.25@${SHA}`, `mirror.example.com:5000/library/nginx:1.25@${SHA}`],
    ['harbor.example.com/dockerhub-proxy/', 'busybox', 'harbor.example.com/dockerhub-proxy/library/busybox'],
    ['localhost', 'quay.io/prometheus/node-exporter:v1.8.0', 'localhost/prometheus/node-exporter:v1.8.0'],
  ])('%s + %s', (registry, image, want) => {
    expect(withRegistry(registry, image)).toBe(want);
    // A registry without a path, applied to its own result, changes nothing; a path prefix would be prefixed again
    // (its rule's match keeps it idempotent: only images still on the source registry are rewritten).
    if (!registry.replace(/\/$/, '').includes('/')) expect(withRegistry(registry, want)).toBe(want);
    else expect(withRegistry(registry, want)).not.toBe(want);
  });

  it('refuses a registry a runtime would read as a Docker Hub namespace, and bad references', () => {
    expect(() => withRegistry('mirror', 'nginx')).toThrow('Docker Hub namespace');
    expect(() => withRegistry('https://mirror.example.com', 'nginx')).toThrow('not a registry');
    expect(() => withRegistry('mirror.example.com', 'Nginx')).toThrow('lowercase');
    expect(() => withRegistry(`m.io/${'p'.repeat(250)}`, 'nginx')).toThrow('255');
  });
});

describe('CEL_REFERENCE_PATTERN', () => {
  const re = compileRegex(CEL_REFERENCE_PATTERN);
  const part = fc.stringMatching(/^[a-z0-9]{1,6}$/);
  const arbitraryRef = fc
    .tuple(
      fc.option(fc.constantFrom('quay.io', 'localhost:5000', 'Reg', 'index.docker.io', 'docker.io', 'myorg')),
      fc.array(part, { minLength: 1, maxLength: 3 }),
      fc.option(fc.stringMatching(/^[\w][\w.-]{0,8}$/)),
      fc.option(fc.constant(SHA)),
    )
    .map(([reg, path, tag, digest]) =>
      [reg ? `${reg}/` : '', path.join('/'), tag ? `:${tag}` : '', digest ? `@${digest}` : ''].join(''),
    );

  it('accepts only references parseImageReference accepts', () => {
    fc.assert(
      fc.property(fc.oneof(arbitraryRef, fc.string({ maxLength: 40 })), (s) => {
        if (re.test(s) && s.length <= CEL_REFERENCE_MAX && !/^[a-f0-9]{64}$/.test(s))
          expect(imageReferenceOf(s)).toBeDefined();
      }),
    );
  });
});
