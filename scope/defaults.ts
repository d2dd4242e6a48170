import type { LabelSelector } from '../rule/labelselector';
import { defaultDragnetMatch } from '../native';
import { Scope, WebhookRule } from './types';

/**
 * The dragnet's net as bundle.yaml installs it (config/webhook/mutating_webhook_configuration.yaml; a test keeps the
 * two equal): KubeMod's resources, CREATE/UPDATE/DELETE, ignore-labelled namespaces and the operator's own left out.
 * What `modrule scope` narrows when no configuration is given.
 */
export function defaultConfigured(ownNamespace = 'kubemod-system'): Scope {
  // One list of KubeMod's resources and exclusions: the native policies' (native/dragnet.ts) is the same net.
  const net = defaultDragnetMatch(ownNamespace);
  return {
    rules: net.rules.map((r) => ({
      ...(r as unknown as Omit<WebhookRule, 'operations'>),
      operations: ['CREATE', 'UPDATE', 'DELETE'],
    })),
    namespaceSelector: net.namespaceSelector as LabelSelector,
    matchConditions: [],
  };
}
