import { JsonValue } from '../util/json';
import { compileJsonPath, JsonPathSyntaxError } from './index';

// Beyond KubeMod: image reference functions in selects (util/image-reference.ts), for filters over every container list.
const pod: JsonValue = {
  spec: {
    initContainers: [{ name: 'init', image: 'busybox' }],
    containers: [
      { name: 'web', image: 'nginx:1.25' },
      { name: 'exporter', image: 'quay.io/prometheus/node-exporter:v1.8.0' },
      { name: 'local', image: 'localhost:5000/app:dev' },
      { name: 'bad', image: 'Not A Reference' },
      { name: 'none' },
      { name: 'number', image: 7 },
    ],
  },
};
const select = (s: string): Array<[JsonValue, string | null, Array<number | string>]> =>
  compileJsonPath(s)
    .select(pod)
    .map((r) => [r.value, r.path, r.indices]);

describe('image functions in selects', () => {
  it('filters Docker Hub images across the container lists, capturing list and index', () => {
    expect(
      select(`$.spec['initContainers','containers'][? imageRegistry(@.image) == "docker.io"].image`),
    ).toEqual([
      ['busybox', '/spec/initContainers/0/image', ['initContainers', 0]],
      ['nginx:1.25', '/spec/containers/0/image', ['containers', 0]],
    ]);
  });

  it('yields each part; undefined for what is not a string reference', () => {
    const parts = (fn: string) => select(`$.spec.containers[*](${fn}(@.image))`).map(([v]) => v);
    expect(parts('imageRegistry')).toEqual(['docker.io', 'quay.io', 'localhost:5000']);
    expect(parts('imageRepository')).toEqual(['library/nginx', 'prometheus/node-exporter', 'app']);
    expect(parts('imageTag')).toEqual(['1.25', 'v1.8.0', 'dev']);
    expect(parts('imageDigest')).toEqual(['', '', '']);
    expect(select('$.spec.containers[? isUndefined(imageTag(@.image))].name').map(([v]) => v)).toEqual([
      'bad',
      'none',
      'number',
    ]);
  });

  it('finds untagged and :latest images (a runtime pulls latest for both)', () => {
    expect(select('$.spec.*[? imageTag(@.image) == "latest"].name').map(([v]) => v)).toEqual(['init']);
  });

  it('takes exactly one argument', () => {
    expect(() => compileJsonPath('imageTag($.a, $.b)')).toThrow(JsonPathSyntaxError);
  });
});
