import { JsonPatchOperation } from '../patch/operation';
import { RuleRef } from '../engine/admit';
import type { ServedResource } from '../scope/types';

/**
 * A resource the API server serves, as the dragnet scope's catalog knows it (group, plural name, kind, scope), plus
 * what an audit needs to list it: the version to list at (the group's preferred one) and the verbs it allows.
 */
export interface ListableResource extends Readonly<ServedResource> {
  readonly version: string;
  readonly verbs: readonly string[];
  /** What kubectl also accepts as the resource's name (`deploy`, `cm`), from discovery. */
  readonly shortNames?: readonly string[];
  /** The singular name (`deployment`), from discovery; empty for some built-in resources. */
  readonly singularName?: string;
}

/** apiVersion of a served resource's objects: `v1`, `apps/v1`. */
export function apiVersionOf(r: Pick<ListableResource, 'group' | 'version'>): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** `deployments.apps`, `configmaps`: how kubectl names a resource. */
export function resourceName(r: Pick<ListableResource, 'group' | 'resource'>): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

/** The object an audit result is about, as a report's `resources` entry names it. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  /** '' for cluster-scoped objects. */
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
}

/** What the webhook would do to one object, per rule: the report's `fail`, `pass` or `error`. */
export type RuleVerdict = 'patch' | 'reject' | 'pass' | 'error';

/** One rule's result for one object. */
export interface RuleResult {
  rule: RuleRef;
  type: 'Patch' | 'Reject';
  verdict: RuleVerdict;
  /** The rejection message, the failure, or nothing. */
  message?: string;
  /**
   * Set for a Warn/DryRun rule (spec.enforcementAction) that would patch or reject: the webhook leaves the object
   * as it is, and the report says `warn`.
   */
  mode?: 'Warn' | 'DryRun';
  /** A Warn/DryRun rule's would-be patch: what enforcing it would change on the object. */
  patch?: JsonPatchOperation[];
}

/**
 * What the webhook would answer for an UPDATE of the object by itself: `patch` (allowed with a patch), `reject`,
 * `error` (a rule failed, nothing else changes), `pass` (allowed unchanged).
 */
export type ObjectVerdict = RuleVerdict;

/** The audit of one object: the object-level verdict, the patch, and a result for every rule that can reach it. */
export interface ObjectAudit {
  ref: ObjectRef;
  verdict: ObjectVerdict;
  /** RFC 6902 patch from the object to what the webhook would make of it; [] unless verdict is `patch`. */
  patch: JsonPatchOperation[];
  /** The rejecting rules' messages, KubeMod's format; '' unless verdict is `reject`. */
  message: string;
  rules: RuleResult[];
}
