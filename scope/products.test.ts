import { mergeProducts, Product } from './products';
import { ruleMatches } from './sends';
import { SCOPE_OPERATIONS, ScopeRequest, WebhookRule } from './types';

const product = (
  resources: string[],
  operations: Product['operations'],
  extra: Partial<Product> = {},
): Product => ({
  groups: [''],
  versions: ['*'],
  resources,
  operations,
  scope: 'Namespaced',
  ...extra,
});

// Every request of a small universe, and whether a list of webhook rules sends it.
const GROUPS = ['', 'apps', 'batch'];
const RESOURCES = ['pods', 'services', 'deployments', 'jobs', 'nodes'];
function sent(rules: readonly WebhookRule[]): string[] {
  const out: string[] = [];
  for (const group of GROUPS)
    for (const resource of RESOURCES)
      for (const operation of SCOPE_OPERATIONS)
        for (const clusterScoped of [false, true]) {
          const r: ScopeRequest = {
            operation,
            group,
            version: 'v1',
            resource,
            namespace: 'x',
            clusterScoped,
            namespaceLabels: {},
          };
          if (rules.some((rule) => ruleMatches(rule, r)))
            out.push(`${operation} ${group}/${resource} ${clusterScoped}`);
        }
  return out;
}

// What the API server sends for the products, read one product at a time (no merging at all).
const unmerged = (products: readonly Product[]): WebhookRule[] =>
  products.map((p) => ({
    apiGroups: [...p.groups],
    apiVersions: [...p.versions],
    resources: [...p.resources],
    operations: [...p.operations],
    scope: p.scope,
  }));

describe('mergeProducts', () => {
  test('one entry per resource and operations: pods CREATE+UPDATE, CREATE and UPDATE are one', () => {
    const products = [
      product(['pods', 'services'], ['CREATE', 'UPDATE']),
      product(['pods'], ['CREATE']),
      product(['pods'], ['UPDATE']),
    ];
    expect(mergeProducts(products)).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['*'],
        resources: ['pods', 'services'],
        operations: ['CREATE', 'UPDATE'],
        scope: 'Namespaced',
      },
    ]);
  });

  test('operations of one resource from different rules are united', () => {
    const merged = mergeProducts([product(['pods'], ['CREATE']), product(['pods'], ['DELETE'])]);
    expect(merged.map((r) => [r.resources, r.operations])).toEqual([[['pods'], ['CREATE', 'DELETE']]]);
  });

  test('an entry another covers (all resources, every group, both scopes) is dropped', () => {
    const wide = product(['*'], ['CREATE', 'UPDATE'], { groups: ['*'], scope: '*' });
    const merged = mergeProducts([
      product(['pods'], ['CREATE']),
      wide,
      product(['jobs'], ['UPDATE'], { groups: ['batch'] }),
    ]);
    expect(merged).toEqual([
      {
        apiGroups: ['*'],
        apiVersions: ['*'],
        resources: ['*'],
        operations: ['CREATE', 'UPDATE'],
        scope: '*',
      },
    ]);
  });

  test('a resource is kept where it has operations the covering entry lacks', () => {
    const merged = mergeProducts([product(['*'], ['CREATE']), product(['pods'], ['CREATE', 'DELETE'])]);
    expect(merged.map((r) => [r.resources, r.operations])).toEqual([
      [['pods'], ['CREATE', 'DELETE']],
      [['*'], ['CREATE']],
    ]);
  });

  test('the API server is sent exactly what the products ask for, merged or not', () => {
    const products = [
      product(['pods', 'services'], ['CREATE', 'UPDATE']),
      product(['pods'], ['CREATE']),
      product(['pods'], ['UPDATE', 'DELETE'], { groups: ['', 'apps'] }),
      product(['deployments'], ['CREATE'], { groups: ['apps'] }),
      product(['*'], ['DELETE'], { groups: ['batch'], scope: '*' }),
      product(['nodes'], ['CREATE'], { scope: 'Cluster' }),
      product(['jobs'], ['DELETE'], { groups: ['batch'] }),
      product(['*'], ['CREATE'], { groups: ['*'], scope: 'Cluster' }),
    ];
    const merged = mergeProducts(products);
    expect(sent(merged)).toEqual(sent(unmerged(products)));
    expect(merged.length).toBeLessThan(products.length);
  });
});
