// Which kinds are cluster-scoped. The operator asks the API server's discovery (operator/rules/kind-scopes.ts); the
// list below is the offline default: tools without a cluster (offline apply, validate), and kinds discovery does
// not serve (yet).

/**
 * Kinds the API server stores without a namespace: every cluster-scoped kind of Kubernetes 1.37 (checked against
 * its discovery in test/e2e/references.e2e.ts), and a few well-known ones of older versions and add-ons.
 */
export const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  'APIService',
  'CertificateSigningRequest',
  'ClusterIssuer',
  'ClusterRole',
  'ClusterRoleBinding',
  'ClusterTrustBundle',
  'ComponentStatus',
  'CSIDriver',
  'CSINode',
  'CustomResourceDefinition',
  'DeviceClass',
  'DeviceTaintRule',
  'FlowSchema',
  'IngressClass',
  'IPAddress',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'MutatingWebhookConfiguration',
  'Namespace',
  'Node',
  'PersistentVolume',
  'PodSecurityPolicy',
  'PriorityClass',
  'PriorityLevelConfiguration',
  'ResourceSlice',
  'RuntimeClass',
  'SelfSubjectAccessReview',
  'SelfSubjectReview',
  'SelfSubjectRulesReview',
  'ServiceCIDR',
  'StorageClass',
  'StorageVersionMigration',
  'SubjectAccessReview',
  'TokenReview',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'ValidatingWebhookConfiguration',
  'VolumeAttachment',
  'VolumeAttributesClass',
]);

/** Whether group/kind is cluster-scoped. */
export type ClusterScoped = (group: string, kind: string) => boolean;

/** The offline answer: the list above, by kind. */
export const offlineClusterScoped: ClusterScoped = (_group, kind) => CLUSTER_SCOPED_KINDS.has(kind);
