import { CLUSTER_SCOPED_KINDS } from '../rule/kinds';
import { BUILTIN_RESOURCES } from './builtin';

// The offline list of cluster-scoped kinds (rule/kinds.ts, for tools without a cluster) holds every cluster-scoped
// kind of the 1.37 discovery table; test/e2e/references.e2e.ts checks the same against a live 1.37 API server.
test('every cluster-scoped kind of Kubernetes 1.37 is cluster-scoped offline, and no namespaced one is', () => {
  const cluster = BUILTIN_RESOURCES.filter((r) => !r.namespaced).map((r) => r.kind);
  expect(cluster.filter((k) => !CLUSTER_SCOPED_KINDS.has(k))).toEqual([]);
  const namespaced = BUILTIN_RESOURCES.filter((r) => r.namespaced).map((r) => r.kind);
  expect(namespaced.filter((k) => CLUSTER_SCOPED_KINDS.has(k))).toEqual([]);
});
