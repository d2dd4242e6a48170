import { ListableResource } from '../../audit/types';

/**
 * What the fake cluster (fake-cluster.ts) serves by default: the core kinds the audit lists, a Deployment, Events
 * (both APIs), ModRules and the report kinds, each with the verbs discovery shows.
 */
export const CORE_RESOURCES: ListableResource[] = [
  {
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    verbs: ['get', 'list', 'patch'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'nodes',
    kind: 'Node',
    namespaced: false,
    verbs: ['get', 'list', 'patch'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'configmaps',
    kind: 'ConfigMap',
    namespaced: true,
    verbs: ['get', 'list', 'patch'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    namespaced: true,
    verbs: ['get', 'list', 'patch'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'pods/status',
    kind: 'Pod',
    namespaced: true,
    verbs: ['get', 'patch'],
  },
  { group: '', version: 'v1', resource: 'events', kind: 'Event', namespaced: true, verbs: ['get', 'list'] },
  {
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    namespaced: true,
    verbs: ['get', 'list', 'patch'],
    shortNames: ['deploy'],
  },
  {
    group: 'events.k8s.io',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    verbs: ['get', 'list'],
  },
  {
    group: 'api.kubemod.io',
    version: 'v1beta1',
    resource: 'modrules',
    kind: 'ModRule',
    namespaced: true,
    verbs: ['get', 'list'],
  },
  {
    group: 'openreports.io',
    version: 'v1alpha1',
    resource: 'reports',
    kind: 'Report',
    namespaced: true,
    verbs: ['get', 'list', 'create', 'update', 'delete'],
  },
  {
    group: 'openreports.io',
    version: 'v1alpha1',
    resource: 'clusterreports',
    kind: 'ClusterReport',
    namespaced: false,
    verbs: ['get', 'list', 'create', 'update', 'delete'],
  },
];
