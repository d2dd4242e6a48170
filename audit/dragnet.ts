import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { compileLabelSelector, CompiledLabelSelector } from '../modrule/labelselector';
import { ServedResource } from './types';

/** The dragnet webhook's name inside the mutating webhook configuration (KubeMod's). */
export const DRAGNET_WEBHOOK = 'dragnet.kubemod.io';
export const MUTATING_CONFIGURATION = 'kubemod-mutating-webhook-configuration';

/**
 * What the API server sends to the dragnet webhook for an UPDATE, read from its live configuration: the resources
 * (rules), the namespaces (namespaceSelector) and the objects (objectSelector). An object outside it is never seen
 * by the webhook, so the audit does not report it (its rules could not have patched it).
 */
export interface DragnetScope {
  /** Whether UPDATEs of this resource reach the webhook. */
  covers(resource: ServedResource): boolean;
  /** Whether objects in a namespace with these labels reach it (also Namespace objects, by their own labels). */
  selectsNamespace(labels: Readonly<Record<string, string>>): boolean;
  /** Whether an object with these labels reaches it. */
  selectsObject(labels: Readonly<Record<string, string>>): boolean;
}

/** Everything reaches the webhook: used when its configuration cannot be read (offline, RBAC). */
export const UNRESTRICTED: DragnetScope = {
  covers: () => true,
  selectsNamespace: () => true,
  selectsObject: () => true,
};

interface Rule {
  groups: string[];
  versions: string[];
  resources: string[];
  operations: string[];
  scope: string;
}

function strings(v: JsonValue | undefined): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
}

function selector(raw: JsonValue | undefined, at: string): CompiledLabelSelector | undefined {
  if (raw === undefined || raw === null) return undefined;
  const problems: string[] = [];
  const compiled = compileLabelSelector(raw, at, (field, message) => problems.push(`${field}: ${message}`));
  if (!compiled) throw new Error(`the dragnet webhook's ${problems.join('; ')}`);
  return compiled;
}

const matches = (list: readonly string[], value: string) => list.includes('*') || list.includes(value);

/**
 * The dragnet's scope from a MutatingWebhookConfiguration, or undefined when it has no dragnet webhook. With
 * matchPolicy Equivalent (the bundle's) a request for any version of a resource is sent, so versions are only
 * compared under Exact.
 */
export function dragnetScope(configuration: JsonObject): DragnetScope | undefined {
  const hooks = Array.isArray(configuration.webhooks) ? configuration.webhooks : [];
  const hook = hooks.find((h): h is JsonObject => isJsonObject(h) && h.name === DRAGNET_WEBHOOK);
  if (!hook) return undefined;
  const exact = hook.matchPolicy === 'Exact';
  const rules: Rule[] = (Array.isArray(hook.rules) ? hook.rules : []).filter(isJsonObject).map((r) => ({
    groups: strings(r.apiGroups),
    versions: strings(r.apiVersions),
    resources: strings(r.resources),
    operations: strings(r.operations),
    scope: typeof r.scope === 'string' ? r.scope : '*',
  }));
  const namespaces = selector(hook.namespaceSelector, 'namespaceSelector');
  const objects = selector(hook.objectSelector, 'objectSelector');
  return {
    covers: (resource) =>
      rules.some(
        (r) =>
          matches(r.operations, 'UPDATE') &&
          matches(r.groups, resource.group) &&
          (!exact || matches(r.versions, resource.version)) &&
          (r.resources.includes('*') ||
            r.resources.includes('*/*') ||
            r.resources.includes(resource.resource)) &&
          (r.scope === '*' || r.scope === (resource.namespaced ? 'Namespaced' : 'Cluster')),
      ),
    selectsNamespace: (labels) => !namespaces || namespaces.matches(labels),
    selectsObject: (labels) => !objects || objects.matches(labels),
  };
}
