import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { parseYamlDocuments } from '../../util/yaml';
import { ResourceCatalog } from '../../scope/catalog';
import { DEFAULT_OWNER_KINDS } from './owners';

const RBAC = join(__dirname, '..', '..', 'config', 'rbac', 'references');

function granted(file: string): Set<string> {
  const out = new Set<string>();
  for (const doc of parseYamlDocuments(readFileSync(join(RBAC, file), 'utf8')) as JsonObject[]) {
    if (doc.kind !== 'ClusterRole') continue;
    for (const rule of doc.rules as JsonObject[]) {
      expect(rule.verbs).toEqual(['get', 'list', 'watch']);
      for (const group of rule.apiGroups as string[])
        for (const resource of rule.resources as string[]) out.add(`${group}/${resource}`);
    }
  }
  return out;
}

describe('config/rbac/references', () => {
  test('owners.yaml lets the operator watch exactly the default owner kinds', () => {
    const catalog = ResourceCatalog.builtin();
    const wanted = DEFAULT_OWNER_KINDS.map((gk) => {
      const [group, kind] = gk.includes('/') ? gk.split('/') : ['', gk];
      const [r] = catalog.resourcesOf(kind).filter((x) => x.group === group);
      return `${group}/${r.resource}`;
    });
    expect([...granted('owners.yaml')].sort()).toEqual(wanted.sort());
  });

  test.each([
    ['configmaps.yaml', '/configmaps'],
    ['secrets.yaml', '/secrets'],
  ])('%s grants reading %s and nothing else', (file, resource) => {
    expect([...granted(file)]).toEqual([resource]);
  });
});
