import { JsonObject } from '../util/json';
import { compileModRule } from '../rule/compile';
import { ModRule } from '../rule/types';
import { metadataOnly, ReferenceObjects, referencesFrom, MAX_SELECTED } from './references';

const cm = (namespace: string, name: string, labels: Record<string, string> = {}): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name,
    namespace,
    labels,
    managedFields: [{ manager: 'kubectl' }],
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', keep: 'me' },
  },
  data: { k: 'v' },
});

function selectorDecl(namespace: string, matchLabels: Record<string, string>) {
  const rule = compileModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace },
    spec: {
      type: 'Patch',
      references: [{ name: 'all', apiVersion: 'v1', kind: 'ConfigMap', labelSelector: { matchLabels } }],
      match: [{ select: '$.kind' }],
      patch: [{ op: 'add', path: '/x', value: '1' }],
    },
  } as unknown as ModRule);
  return rule.references!.named[0];
}

describe('ReferenceObjects', () => {
  test('objects are held as syntheticRefs shows them: no managedFields, no last-applied annotation', () => {
    const refs = referencesFrom([cm('a', 'one')]);
    expect(refs.get('', 'ConfigMap', 'a', 'one')?.metadata).toEqual({
      name: 'one',
      namespace: 'a',
      labels: {},
      annotations: { keep: 'me' },
    });
    expect(refs.get('', 'ConfigMap', 'b', 'one')).toBeUndefined();
    expect(refs.get('apps', 'ConfigMap', 'a', 'one')).toBeUndefined();
  });

  test('partitions of one kind are replaced independently; a lookup sees them all', () => {
    const refs = new ReferenceObjects();
    const owners = refs.partition('', 'ConfigMap', 'owners');
    const named = refs.partition('', 'ConfigMap', 'named:a');
    owners.replace([cm('a', 'one'), cm('b', 'two')]);
    named.replace([cm('a', 'three')]);
    owners.replace([cm('b', 'two')]);
    expect(refs.get('', 'ConfigMap', 'a', 'one')).toBeUndefined();
    expect(refs.get('', 'ConfigMap', 'a', 'three')).toBeDefined();
    named.remove('a', 'three');
    expect(refs.get('', 'ConfigMap', 'a', 'three')).toBeUndefined();
    refs.drop('', 'ConfigMap', 'owners');
    expect(refs.get('', 'ConfigMap', 'b', 'two')).toBeUndefined();
    expect(refs.counts()).toEqual(new Map([['/ConfigMap', 0]]));
  });

  test('a selector lists its namespace’s matching objects sorted, and follows changes', () => {
    const refs = new ReferenceObjects();
    const part = refs.partition('', 'ConfigMap', 'x');
    part.replace([
      cm('a', 'b', { team: 'x' }),
      cm('a', 'a', { team: 'x' }),
      cm('b', 'c', { team: 'x' }),
      cm('a', 'd'),
    ]);
    const decl = selectorDecl('a', { team: 'x' });
    const names = () => refs.select(decl).map((o) => (o.metadata as JsonObject).name);
    expect(names()).toEqual(['a', 'b']);
    expect(refs.select(decl)).toBe(refs.select(decl)); // one list until something changes
    part.upsert(cm('a', 'c', { team: 'x' }));
    expect(names()).toEqual(['a', 'b', 'c']);
    part.remove('a', 'a');
    expect(names()).toEqual(['b', 'c']);
  });

  test(`a selector lists at most ${MAX_SELECTED} objects`, () => {
    const refs = new ReferenceObjects();
    refs
      .partition('', 'ConfigMap', 'x')
      .replace(
        Array.from({ length: MAX_SELECTED + 10 }, (_, i) =>
          cm('a', `cm-${String(i).padStart(4, '0')}`, { t: 'x' }),
        ),
      );
    expect(refs.select(selectorDecl('a', { t: 'x' }))).toHaveLength(MAX_SELECTED);
  });

  test('a partition can keep only metadata (owners read only by their metadata)', () => {
    const refs = new ReferenceObjects();
    refs.partition('', 'ConfigMap', 'meta', metadataOnly).upsert(cm('a', 'one'));
    expect(refs.get('', 'ConfigMap', 'a', 'one')).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'one', namespace: 'a', labels: {}, annotations: { keep: 'me' } },
    });
  });

  test('an object nesting deeper than the engine evaluates is held as absent', () => {
    let deep: JsonObject = { leaf: true };
    for (let i = 0; i < 1100; i++) deep = { x: deep };
    const refs = new ReferenceObjects();
    const part = refs.partition('example.com', 'Deep', 'x');
    part.upsert({
      apiVersion: 'example.com/v1',
      kind: 'Deep',
      metadata: { name: 'd', namespace: 'a' },
      spec: deep,
    });
    expect(refs.get('example.com', 'Deep', 'a', 'd')).toBeUndefined();
  });
});
