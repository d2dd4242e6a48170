import { cloneJson, isJsonObject, jsonEqual, JsonValue } from './json';

describe('json values', () => {
  const deployment: JsonValue = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { app: 'web' } },
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'c', image: 'nginx:1.25' }] } } },
  };

  it('clones deeply so that changing the copy leaves the original alone', () => {
    const copy = cloneJson(deployment) as { metadata: { labels: Record<string, string> } };
    copy.metadata.labels.app = 'other';
    expect((deployment as { metadata: { labels: Record<string, string> } }).metadata.labels.app).toBe('web');
  });

  it.each<[JsonValue, JsonValue, boolean]>([
    [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, true],
    [{ a: 1 }, { a: 1, b: null }, false],
    [[1, 2], [2, 1], false],
    [[], {}, false],
    [null, null, true],
    ['1', 1, false],
    [deployment, cloneJson(deployment), true],
  ])('jsonEqual(%j, %j) is %s', (a, b, expected) => {
    expect(jsonEqual(a, b)).toBe(expected);
  });

  it('keeps a __proto__ key as a plain member', () => {
    const parsed = JSON.parse('{"metadata":{"labels":{"__proto__":{"polluted":"yes"}}}}') as JsonValue;
    const copy = cloneJson(parsed) as { metadata: { labels: Record<string, unknown> } };
    expect(Object.keys(copy.metadata.labels)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(jsonEqual(copy as unknown as JsonValue, parsed)).toBe(true);
  });

  it('tells objects from arrays and null', () => {
    expect(isJsonObject({})).toBe(true);
    expect(isJsonObject([])).toBe(false);
    expect(isJsonObject(null)).toBe(false);
  });
});
