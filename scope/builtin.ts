import { ServedResource } from './types';

// Kubernetes 1.37.2 discovery (GET /api/v1 and /apis/GROUP/VERSION of ../shared/envtest-1.37), one line per group:
// "resource:Kind" for namespaced and "resource:Kind!" for cluster-scoped resources.
const TABLE: ReadonlyArray<[group: string, resources: string]> = [
  [
    '',
    'bindings:Binding componentstatuses:ComponentStatus! configmaps:ConfigMap endpoints:Endpoints events:Event limitranges:LimitRange namespaces:Namespace! nodes:Node! persistentvolumeclaims:PersistentVolumeClaim persistentvolumes:PersistentVolume! pods:Pod podtemplates:PodTemplate replicationcontrollers:ReplicationController resourcequotas:ResourceQuota secrets:Secret serviceaccounts:ServiceAccount services:Service',
  ],
  ['apiregistration.k8s.io', 'apiservices:APIService!'],
  [
    'apps',
    'controllerrevisions:ControllerRevision daemonsets:DaemonSet deployments:Deployment replicasets:ReplicaSet statefulsets:StatefulSet',
  ],
  ['events.k8s.io', 'events:Event'],
  ['authentication.k8s.io', 'selfsubjectreviews:SelfSubjectReview! tokenreviews:TokenReview!'],
  [
    'authorization.k8s.io',
    'localsubjectaccessreviews:LocalSubjectAccessReview selfsubjectaccessreviews:SelfSubjectAccessReview! selfsubjectrulesreviews:SelfSubjectRulesReview! subjectaccessreviews:SubjectAccessReview!',
  ],
  ['autoscaling', 'horizontalpodautoscalers:HorizontalPodAutoscaler'],
  ['batch', 'cronjobs:CronJob jobs:Job'],
  [
    'certificates.k8s.io',
    'certificatesigningrequests:CertificateSigningRequest! clustertrustbundles:ClusterTrustBundle! podcertificaterequests:PodCertificateRequest',
  ],
  [
    'networking.k8s.io',
    'ingressclasses:IngressClass! ingresses:Ingress ipaddresses:IPAddress! networkpolicies:NetworkPolicy servicecidrs:ServiceCIDR!',
  ],
  ['policy', 'poddisruptionbudgets:PodDisruptionBudget'],
  [
    'rbac.authorization.k8s.io',
    'clusterrolebindings:ClusterRoleBinding! clusterroles:ClusterRole! rolebindings:RoleBinding roles:Role',
  ],
  [
    'storage.k8s.io',
    'csidrivers:CSIDriver! csinodes:CSINode! csistoragecapacities:CSIStorageCapacity storageclasses:StorageClass! volumeattachments:VolumeAttachment! volumeattributesclasses:VolumeAttributesClass!',
  ],
  [
    'admissionregistration.k8s.io',
    'mutatingadmissionpolicies:MutatingAdmissionPolicy! mutatingadmissionpolicybindings:MutatingAdmissionPolicyBinding! mutatingwebhookconfigurations:MutatingWebhookConfiguration! validatingadmissionpolicies:ValidatingAdmissionPolicy! validatingadmissionpolicybindings:ValidatingAdmissionPolicyBinding! validatingwebhookconfigurations:ValidatingWebhookConfiguration!',
  ],
  ['apiextensions.k8s.io', 'customresourcedefinitions:CustomResourceDefinition!'],
  ['scheduling.k8s.io', 'priorityclasses:PriorityClass!'],
  ['coordination.k8s.io', 'leases:Lease'],
  ['node.k8s.io', 'runtimeclasses:RuntimeClass!'],
  ['discovery.k8s.io', 'endpointslices:EndpointSlice'],
  [
    'resource.k8s.io',
    'deviceclasses:DeviceClass! devicetaintrules:DeviceTaintRule! resourceclaims:ResourceClaim resourceclaimtemplates:ResourceClaimTemplate resourceslices:ResourceSlice!',
  ],
  [
    'flowcontrol.apiserver.k8s.io',
    'flowschemas:FlowSchema! prioritylevelconfigurations:PriorityLevelConfiguration!',
  ],
  ['storagemigration.k8s.io', 'storageversionmigrations:StorageVersionMigration!'],
];

/** The resources a Kubernetes 1.37 API server serves out of the box (for `modrule scope` without a cluster). */
export const BUILTIN_RESOURCES: readonly ServedResource[] = TABLE.flatMap(([group, text]) =>
  text.split(' ').map((entry) => {
    const [resource, kind] = entry.split(':');
    const namespaced = !kind.endsWith('!');
    return { group, resource, kind: namespaced ? kind : kind.slice(0, -1), namespaced };
  }),
);
