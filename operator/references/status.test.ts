import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { modRule } from '../testing/objects';
import { createKubeClient } from '../../kube/kube';
import { ReferenceCaches } from './caches';
import { referenceFacet } from './status';
import { ReferenceStatus } from './status-feed';

describe('referenceFacet', () => {
  it('names the one missing reference, or counts them first', () => {
    expect(referenceFacet([])).toBeUndefined();
    expect(referenceFacet(['syntheticRefs.mirror: ConfigMap platform/mirror not found'])).toEqual({
      condition: {
        type: 'ReferenceMissing',
        reason: 'NotFound',
        message: 'syntheticRefs.mirror: ConfigMap platform/mirror not found',
      },
    });
    expect(
      referenceFacet([
        'syntheticRefs.a: ConfigMap x/a not found',
        'syntheticRefs.owner: owners of kind Widget are not read (--owner-kinds)',
      ])?.condition,
    ).toEqual({
      type: 'ReferenceMissing',
      reason: 'Unreadable',
      message:
        '2 references are missing or cannot be read. syntheticRefs.a: ConfigMap x/a not found; ' +
        'syntheticRefs.owner: owners of kind Widget are not read (--owner-kinds)',
    });
  });
});

describe('ReferenceMissing on the (fake) API server', () => {
  const harness = useClusterSync();
  let caches: ReferenceCaches;
  let feed: ReferenceStatus;
  beforeEach(() => {
    const { api, store, status } = harness;
    caches = new ReferenceCaches({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      store,
    });
    feed = new ReferenceStatus(store, caches, status);
    caches.start();
  });
  afterEach(async () => {
    feed.stop();
    await caches.stop();
  });

  const condition = (type: string): JsonObject | undefined =>
    (
      ((harness.api.get('modrules', 'shop', 'mirror')?.status as JsonObject | undefined)?.conditions ??
        []) as JsonObject[]
    ).find((c) => c.type === type);

  it('is True while the ConfigMap is missing (Ready names it), False with its own reason once it exists', async () => {
    const { api, sync } = harness;
    api.put(
      'modrules',
      modRule('shop', 'mirror', {
        type: 'Patch',
        references: [{ name: 'mirror', apiVersion: 'v1', kind: 'ConfigMap', objectName: 'mirror' }],
        match: [{ select: '$.syntheticRefs.mirror.data.host' }],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/mirror',
            value: '{{ .Target.syntheticRefs.mirror.data.host }}',
          },
        ],
      }),
    );
    sync.start();
    await eventually(() => condition('ReferenceMissing')?.status === 'True');
    expect(condition('ReferenceMissing')).toMatchObject({
      reason: 'NotFound',
      message: 'syntheticRefs.mirror: ConfigMap shop/mirror not found',
    });
    expect(condition('Ready')).toMatchObject({ status: 'True' });
    expect(String(condition('Ready')?.message)).toContain(
      'syntheticRefs.mirror: ConfigMap shop/mirror not found',
    );
    await eventually(() => api.list('events').some((e) => e.reason === 'ReferenceMissing'));
    api.put('configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'mirror', namespace: 'shop' },
      data: { host: 'h' },
    });
    await eventually(() => condition('ReferenceMissing')?.status === 'False');
    expect(condition('ReferenceMissing')?.reason).toBe('ReferencesFound');
  });
});
