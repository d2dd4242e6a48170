import { compileTemplate } from './index';

const SHA = `sha256:${'0123456789abcdef'.repeat(4)}`;
const render = (src: string, image: unknown): string =>
  compileTemplate(src).render({ Target: { image }, SelectedItem: image });

describe('image template functions', () => {
  // The table through every function: registry | repository | tag | digest.
  it.each([
    ['nginx:1.25', 'docker.io|library/nginx|1.25|'],
    [`docker.io/bitnami/redis@${SHA}`, `docker.io|bitnami/redis||${SHA}`],
    ['quay.io/prometheus/node-exporter:v1.8.0', 'quay.io|prometheus/node-exporter|v1.8.0|'],
    ['localhost:5000/app:dev', 'localhost:5000|app|dev|'],
    ['registry.k8s.io/pause:3.9', 'registry.k8s.io|pause|3.9|'],
    ['library/busybox', 'docker.io|library/busybox|latest|'],
    [`nginx:1.25@${SHA}`, `docker.io|library/nginx|1.25|${SHA}`],
  ])('%s', (image, want) => {
    const src =
      '{{ imageRegistry .Target.image }}|{{ imageRepository .Target.image }}|' +
      '{{ .Target.image | imageTag }}|{{ imageDigest .SelectedItem }}';
    expect(render(src, image)).toBe(want);
  });

  it.each([
    ['nginx:1.25', 'mirror.example.com/library/nginx:1.25'],
    [`docker.io/bitnami/redis@${SHA}`, `mirror.example.com/bitnami/redis@${SHA}`],
    ['quay.io/prometheus/node-exporter:v1.8.0', 'mirror.example.com/prometheus/node-exporter:v1.8.0'],
    ['localhost:5000/app:dev', 'mirror.example.com/app:dev'],
    ['registry.k8s.io/pause:3.9', 'mirror.example.com/pause:3.9'],
    ['library/busybox', 'mirror.example.com/library/busybox'],
    [`nginx:1.25@${SHA}`, `mirror.example.com/library/nginx:1.25@${SHA}`],
  ])('imageWithRegistry mirror.example.com %s', (image, want) => {
    expect(render('{{ imageWithRegistry "mirror.example.com" .SelectedItem }}', image)).toBe(want);
    // Twice is once.
    expect(render('{{ imageWithRegistry "mirror.example.com" .SelectedItem }}', want)).toBe(want);
  });

  it('builds a pull-through cache path that keeps the source registry', () => {
    const src =
      '{{ imageWithRegistry (print "cache.example.com/" (imageRegistry .SelectedItem)) .SelectedItem }}';
    expect(render(src, 'nginx:1.25')).toBe('cache.example.com/docker.io/library/nginx:1.25');
    expect(render(src, 'quay.io/prometheus/node-exporter:v1.8.0')).toBe(
      'cache.example.com/quay.io/prometheus/node-exporter:v1.8.0',
    );
  });

  it('fails the call for what is not a reference, or not a string', () => {
    expect(() => render('{{ imageRegistry .SelectedItem }}', 'Nginx')).toThrow(
      /error calling imageRegistry: invalid image reference "Nginx": repository name "library\/Nginx" must be lowercase/,
    );
    expect(() => render('{{ imageWithRegistry "mirror" .SelectedItem }}', 'nginx')).toThrow(
      'would be read as a Docker Hub namespace',
    );
    expect(() => render('{{ imageTag .SelectedItem }}', 3)).toThrow(/imageTag/);
  });
});
