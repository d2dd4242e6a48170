import { JsonObject } from '../util/json';
import { compileLabelSelector, CompiledLabelSelector } from '../rule/labelselector';
import { readLive } from '../scope/ownership';
import { dragnetOf } from '../scope/entry';
import { ruleMatches, selectorMatches } from '../scope/sends';
import { ScopeRequest } from '../scope/types';
import { ListableResource } from './types';

/**
 * What the API server sends to the dragnet webhook for an UPDATE, read from its configuration: the resources
 * (rules), the namespaces (namespaceSelector) and the objects (objectSelector). An object outside it is never seen
 * by the webhook, so the audit does not report it (its rules could not have patched it). It is the net as
 * installed: with the dragnet scope on (`--dragnet-scope rules`) the live registration is narrowed to what the
 * ModRules in force can act on, and may be a moment behind a rule just added; the operator keeps the installed net
 * in an annotation (scope/ownership.ts), and the narrowing only leaves out objects no rule can act on, which the
 * engine finds anyway. For the same reason the registration's matchConditions (CEL) are not evaluated.
 */
export interface InstalledNet {
  /** Whether UPDATEs of this resource reach the webhook. */
  covers(resource: ListableResource): boolean;
  /** Whether objects in a namespace with these labels reach it (also Namespace objects, by their own labels). */
  selectsNamespace(labels: Readonly<Record<string, string>>): boolean;
  /** Whether an object with these labels reaches it. */
  selectsObject(labels: Readonly<Record<string, string>>): boolean;
}

/** Everything reaches the webhook: used when its configuration cannot be read (offline, RBAC). */
export const UNRESTRICTED: InstalledNet = {
  covers: () => true,
  selectsNamespace: () => true,
  selectsObject: () => true,
};

/** An UPDATE as the API server matches it against the registration (scope/sends.ts). */
function update(resource: Omit<ScopeRequest, 'operation'>): ScopeRequest {
  return { operation: 'UPDATE', ...resource };
}

/**
 * The dragnet's scope from a MutatingWebhookConfiguration, or undefined when it has no dragnet webhook. With
 * matchPolicy Equivalent (the bundle's) a request for any version of a resource is sent, so versions are only
 * compared under Exact.
 */
export function installedNetOf(configuration: JsonObject): InstalledNet | undefined {
  const found = dragnetOf(configuration);
  if (!found) return undefined;
  const reg = readLive(configuration, found.webhook).configured;
  const exact = found.webhook.matchPolicy === 'Exact';
  const rules = exact ? reg.rules : reg.rules.map((r) => ({ ...r, apiVersions: ['*'] }));
  let objects: CompiledLabelSelector | undefined;
  if (found.webhook.objectSelector) {
    const problems: string[] = [];
    objects = compileLabelSelector(found.webhook.objectSelector, 'objectSelector', (f, m) =>
      problems.push(`${f}: ${m}`),
    );
    if (!objects) throw new Error(`the dragnet webhook's ${problems.join('; ')}`);
  }
  return {
    covers: (r) =>
      rules.some((rule) =>
        ruleMatches(
          rule,
          update({
            group: r.group,
            version: r.version,
            resource: r.resource,
            namespace: '',
            clusterScoped: !r.namespaced,
            namespaceLabels: {},
          }),
        ),
      ),
    selectsNamespace: (labels) =>
      selectorMatches(
        reg,
        update({
          group: '',
          version: 'v1',
          resource: 'namespaces',
          namespace: '',
          clusterScoped: true,
          namespaceLabels: labels,
        }),
      ),
    selectsObject: (labels) => !objects || objects.matches(labels),
  };
}
