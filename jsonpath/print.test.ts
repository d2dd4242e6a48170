import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { JsonPathNode, parseJsonPath } from './index';
import { printJsonPath } from './print';

// Columns differ between a text and its printed form; everything else must be the same tree.
function shape(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(shape);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k]) => k !== 'column')
      .map(([k, v]) => [k, shape(v)]),
  );
}

const roundTrips = (source: string): void => {
  const ast: JsonPathNode = parseJsonPath(source);
  const printed = printJsonPath(ast);
  expect(shape(parseJsonPath(printed))).toEqual(shape(ast));
  // Printing is stable: the printed text prints as itself.
  expect(printJsonPath(parseJsonPath(printed))).toBe(printed);
};

/** Every select and path-with-select of the shipped examples. */
function exampleSelects(dir = join(__dirname, '..', 'examples'), out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) exampleSelects(path, out);
    else if (/\.ya?ml$/.test(name))
      for (const m of readFileSync(path, 'utf8').matchAll(/^\s*-?\s*select:\s*(['"]?)(.*)\1\s*$/gm))
        out.push(m[1] === "'" ? m[2].replace(/''/g, "'") : m[2]);
  }
  return out;
}

describe('printJsonPath', () => {
  it.each([
    '$.kind',
    '$',
    '@',
    "$.metadata.labels['app.kubernetes.io/name']",
    '$.spec.template.spec.containers[*].image',
    '$.spec.containers[0].ports[-1]',
    "$.spec['containers','initContainers'][? imageRegistry(@.image) == \"docker.io\"].image",
    '$..image',
    '$..*',
    "$..['a b']",
    '$..[0]',
    '$.a[1:3]',
    '$.a[::2]',
    '$.a[:-1:1]',
    '$.a[1,2,-1]',
    '$.*.b',
    '$.a[(@.length - 1)]',
    '$.spec.containers[*](@.name == "nginx")',
    '$.spec.containers[? @.name =~ "^nginx" && !(@.image in ["a", "b"])]',
    'length($.spec.externalIPs) > 0',
    '$.a == true || $.b != null && $.c < 1.5e3',
    '-$.a + 2 * (3 - $.b) % 4 / 5',
    '$.x == "quote \\" and \\\\ and \\n newline"',
    '$.x == `raw\\text`',
    "$.metadata.annotations['k'] == 'v'",
    'isDefined($.a) && isEmpty($.b) || isNotEmpty($.c) && !isUndefined($.d)',
    '$["ünïcode"].ñame',
    '[1, "a", [true, null]]',
  ])('%s round-trips', roundTrips);

  it('round-trips every select of examples/', () => {
    const selects = exampleSelects();
    expect(selects.length).toBeGreaterThan(30);
    for (const s of selects) roundTrips(s);
  });

  it('round-trips whatever token soup parses', () => {
    const tokens = [
      '$',
      '@',
      '.',
      '..',
      '[',
      ']',
      '(',
      ')',
      '?',
      '*',
      ',',
      ':',
      '-',
      '!',
      '==',
      '<',
      '&&',
      '||',
      '=~',
      'in',
      'a',
      'spec',
      'true',
      'null',
      '0',
      '-1',
      '2.5',
      '"x"',
      "'y.z'",
      'length',
      'imageTag',
      '`r`',
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...tokens), { maxLength: 14 }), (parts) => {
        let ast: JsonPathNode;
        try {
          ast = parseJsonPath(parts.join(''));
        } catch {
          return;
        }
        expect(shape(parseJsonPath(printJsonPath(ast)))).toEqual(shape(ast));
      }),
      { numRuns: 1500 },
    );
  });
});
