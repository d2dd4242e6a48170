import type { LabelSelector } from '../rule/labelselector';
import type { JsonValue } from '../util/json';

/** The admission operations a ModRule can ask for (CONNECT never reaches the dragnet). */
export type ScopeOperation = 'CREATE' | 'UPDATE' | 'DELETE';
export const SCOPE_OPERATIONS: readonly ScopeOperation[] = ['CREATE', 'UPDATE', 'DELETE'];

/** `scope` of a webhook rule: which objects of the listed resources it matches. */
export type RuleScope = 'Cluster' | 'Namespaced' | '*';

/** One `rules` entry of a webhook (admissionregistration.k8s.io/v1 RuleWithOperations), defaults filled in. */
export interface WebhookRule {
  apiGroups: string[];
  apiVersions: string[];
  /** Resources, `*`, and `resource/subresource` forms as the API server accepts them. */
  resources: string[];
  /** CREATE, UPDATE, DELETE, CONNECT or `*`. */
  operations: string[];
  scope: RuleScope;
}

/** One `matchConditions` entry: a CEL expression the API server evaluates before it calls the webhook. */
export interface MatchCondition {
  name: string;
  expression: string;
}

/**
 * The part of the dragnet webhook that decides which requests the API server sends it: the part the operator
 * narrows. Everything else of the webhook (clientConfig, failurePolicy, timeouts, objectSelector) stays as installed.
 */
export interface Scope {
  rules: WebhookRule[];
  namespaceSelector: LabelSelector;
  matchConditions: MatchCondition[];
}

/** One resource the API server serves, from discovery: what a kind-pinned rule's objects are written to. */
export interface ServedResource {
  /** '' for the core group. */
  group: string;
  /** Plural resource name, e.g. deployments. Never a subresource. */
  resource: string;
  kind: string;
  namespaced: boolean;
}

/** One admission request as the API server matches it against a registration (tests and `modrule scope`). */
export interface ScopeRequest {
  operation: ScopeOperation;
  group: string;
  version: string;
  resource: string;
  /** '' for cluster-scoped objects; a Namespace's own name may be given for Namespace objects. */
  namespace: string;
  /** Whether the resource is cluster-scoped (Namespaces, Nodes, ClusterRoles ...). */
  clusterScoped: boolean;
  /** Labels of the namespace (of the Namespace object itself for Namespace objects): namespaceSelector input. */
  namespaceLabels: Readonly<Record<string, string>>;
  /** The request's object (CREATE, UPDATE); absent: conditions on it count as true (the call may be made). */
  object?: JsonValue;
}
