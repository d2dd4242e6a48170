import { JsonObject } from '../util/json';
import type { LabelSelector } from './labelselector';

/** The API group/version and kind KubeMod users already have in their clusters. */
export const MODRULE_API_VERSION = 'api.kubemod.io/v1beta1';
export const MODRULE_KIND = 'ModRule';

export type ModRuleType = 'Patch' | 'Reject';
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
export type MatchFor = 'Any' | 'All';
export type PatchOperationType = 'add' | 'replace' | 'remove';
/**
 * What a rule does with its result: Enforce (patch or reject), Warn (admit unchanged and tell the writer), DryRun
 * (admit unchanged and only record it). Beyond KubeMod, as Gatekeeper's enforcementAction.
 */
export type EnforcementAction = 'Enforce' | 'Warn' | 'DryRun';
export const ENFORCEMENT_ACTIONS: readonly EnforcementAction[] = ['Enforce', 'Warn', 'DryRun'];

/** One criteria item of spec.match. */
export interface MatchItem {
  select: string;
  matchValue?: string;
  matchValues?: string[];
  matchRegex?: string;
  matchFor?: MatchFor;
  negate?: boolean;
}

/** One operation of spec.patch. */
export interface PatchOperation {
  op: PatchOperationType;
  select?: string;
  path: string;
  value?: string;
}

/** spec of a ModRule, field for field as in KubeMod's CRD. */
export interface ModRuleSpec {
  type: ModRuleType;
  admissionOperations?: AdmissionOperation[];
  executionTier?: number;
  match: MatchItem[];
  patch?: PatchOperation[];
  rejectMessage?: string;
  targetNamespaceRegex?: string;
  /** Beyond KubeMod: cluster-wide rules only; the labels the object's Namespace must have. */
  targetNamespaceSelector?: LabelSelector;
  /** Beyond KubeMod: other objects the rule reads, each as syntheticRefs.<name>. */
  references?: ModRuleReference[];
  /** Beyond KubeMod: Enforce (default), Warn or DryRun. */
  enforcementAction?: EnforcementAction;
  /** Beyond KubeMod: for a Pod rule, the controller kinds whose pod templates it also applies to ("*": all). */
  podControllers?: string[];
}

/** One entry of spec.references: an object by objectName, or a list of objects by labelSelector. */
export interface ModRuleReference {
  name: string;
  apiVersion: string;
  kind: string;
  namespace?: string;
  objectName?: string;
  labelSelector?: LabelSelector;
}

/** A condition as `kubectl get modrules` shows it. */
export interface ModRuleCondition {
  type: 'Ready';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface ModRuleStatus {
  observedGeneration?: number;
  conditions?: ModRuleCondition[];
  /** The controller kinds whose pod templates the rule reaches (spec.podControllers). */
  podControllers?: string[];
}

/** api.kubemod.io/v1beta1 ModRule. */
export interface ModRule {
  apiVersion: typeof MODRULE_API_VERSION;
  kind: typeof MODRULE_KIND;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  } & JsonObject;
  spec: ModRuleSpec;
  status?: ModRuleStatus;
}

/** Tier bounds from KubeMod's CRD. */
export const MIN_EXECUTION_TIER = -32767;
export const MAX_EXECUTION_TIER = 32766;

/** The namespace whose ModRules are cluster-wide (configurable at run time). */
export const DEFAULT_CLUSTER_NAMESPACE = 'kubemod-system';

/**
 * The control plane's own namespace. The bundle's webhooks exclude it by name (KubeMod asked users to label it
 * ignored); offline `apply` still patches what it is given, e.g. a chart installed into kube-system.
 */
export const SYSTEM_NAMESPACE = 'kube-system';

/** Labels and annotations KubeMod users rely on. */
export const IGNORE_LABEL = 'admission.kubemod.io/ignore';
export const INJECT_NODE_REF_ANNOTATION = 'ref.kubemod.io/inject-node-ref';
export const NODE_REF_ANNOTATION = 'ref.kubemod.io/node';
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
