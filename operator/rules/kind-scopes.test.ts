import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { ResourceCatalog } from '../../scope/catalog';
import { ServedResource } from '../../scope/types';
import { RuleStore } from '../../store/rules';
import { createKubeClient } from '../../kube/kube';
import { StatusReporter } from '../status/reporter';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { labelRule, modRule } from '../testing/objects';
import { CatalogSource } from './discovery';
import { KindScopes } from './kind-scopes';
import { ClusterSync } from './sync';

// A kind's scope comes from the API server's discovery: a rule referencing a custom kind is compiled again when a
// CRD makes that kind cluster-scoped (or namespaced again), as controllers.ts wires Discovery to ClusterSync.

/** Discovery as a test sets it: the kinds served, changed by `serve`. */
class Served implements CatalogSource {
  private current: ResourceCatalog | null = null;
  private readonly listeners = new Set<() => void>();
  catalog(): ResourceCatalog | null {
    return this.current;
  }
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
  serve(resources: ServedResource[]): void {
    this.current = new ResourceCatalog(resources);
    this.listeners.forEach((l) => l());
  }
}

const gadgets = (namespaced: boolean): ServedResource => ({
  group: 'example.com',
  resource: 'gadgets',
  kind: 'Gadget',
  namespaced,
});

const readsGadget = (namespace: string, name: string): JsonObject =>
  modRule(namespace, name, {
    type: 'Patch',
    ...(namespace === 'kubemod-system' ? { targetNamespaceRegex: '.*' } : {}),
    match: [{ select: '$.syntheticRefs.gadget.metadata.name' }],
    patch: [{ op: 'add', path: '/metadata/labels/gadget', value: '"yes"' }],
    references: [{ name: 'gadget', apiVersion: 'example.com/v1', kind: 'Gadget', objectName: 'blue' }],
  });

describe('KindScopes: which kinds are cluster-scoped, from discovery', () => {
  let api: FakeApiServer;
  let sync: ClusterSync;
  let status: StatusReporter;
  afterEach(async () => {
    await sync.stop();
    await status.stop();
    await api.close();
  });

  it('compiles again the rules whose referenced kind changed scope, and only those', async () => {
    api = await FakeApiServer.start();
    const scopes = new KindScopes();
    const served = new Served();
    scopes.follow(served);
    const store = new RuleStore({ keepSource: false, references: { clusterScoped: scopes.clusterScoped } });
    const client = createKubeClient(api.access());
    status = new StatusReporter({ client, logger: silentLogger(), backoffMs: 10 });
    sync = new ClusterSync({
      client,
      store,
      logger: silentLogger(),
      status,
      backoff: { initialMs: 10, maxMs: 50 },
    });
    served.onChange(() => sync.rescope());
    api.put('modrules', readsGadget('team-a', 'tenant'));
    api.put('modrules', readsGadget('kubemod-system', 'wide'));
    api.put('modrules', labelRule('team-a', 'plain'));
    sync.start();
    await sync.synced;
    // Before discovery is read, and while it does not serve Gadget: the offline list, which does not know it.
    expect(store.ruleOf('team-a', 'tenant')?.references?.named[0].namespace).toBe('team-a');
    const plain = store.ruleOf('team-a', 'plain');

    served.serve([gadgets(false)]); // the CRD says Cluster
    expect(store.ruleOf('team-a', 'tenant')).toBeUndefined();
    expect(store.ruleOf('kubemod-system', 'wide')?.references?.named[0].namespace).toBe('');
    expect(store.ruleOf('team-a', 'plain')).toBe(plain); // not compiled again
    const ready = (name: string) =>
      (
        ((api.get('modrules', 'team-a', name)?.status as JsonObject | undefined)?.conditions ??
          []) as JsonObject[]
      ).find((c) => c.type === 'Ready');
    await eventually(() => ready('tenant')?.reason === 'Invalid');
    expect(ready('tenant')?.message).toContain(
      'spec.references[0].kind: Forbidden: Gadget is cluster-scoped; only ModRules in kubemod-system may read',
    );
    // The validating webhook asks the same.
    expect(store.compileRule(readsGadget('team-b', 'new')).problems).toHaveLength(1);

    served.serve([gadgets(true)]); // recreated as Namespaced
    expect(store.ruleOf('team-a', 'tenant')?.references?.named[0].namespace).toBe('team-a');
    expect(store.ruleOf('kubemod-system', 'wide')?.references?.named[0].namespace).toBe('kubemod-system');
    await eventually(() => ready('tenant')?.status === 'True');
  });
});
