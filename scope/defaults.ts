import { IGNORE_LABEL } from '../modrule/types';
import { NAME_LABEL } from './compute';
import { Registration } from './types';

/**
 * The dragnet's net as bundle.yaml installs it (config/webhook/mutating_webhook_configuration.yaml; a test keeps the
 * two equal): KubeMod's resources, CREATE/UPDATE/DELETE, ignore-labelled namespaces and the operator's own left out.
 * What `modrule scope` narrows when no configuration is given.
 */
export function defaultConfigured(ownNamespace = 'kubemod-system'): Registration {
  return {
    rules: [
      {
        apiGroups: ['*'],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: [
          'namespaces',
          'nodes',
          'configmaps',
          'persistentvolumeclaims',
          'persistentvolumes',
          'secrets',
          'services',
          'daemonsets',
          'deployments',
          'replicasets',
          'statefulsets',
          'horizontalpodautoscalers',
          'ingresses',
          'pods',
          'cronjobs',
          'jobs',
          'serviceaccounts',
          'clusterrolebindings',
          'clusterroles',
          'rolebindings',
          'roles',
        ],
        scope: '*',
      },
    ],
    namespaceSelector: {
      matchExpressions: [
        { key: IGNORE_LABEL, operator: 'NotIn', values: ['true'] },
        { key: NAME_LABEL, operator: 'NotIn', values: [ownNamespace, 'kube-system'] },
      ],
    },
    matchConditions: [],
  };
}
