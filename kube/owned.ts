/*
 * The names and API paths of the objects modrule owns, as the manifests in config/ name them (KubeMod's names, so
 * that an existing installation is taken over in place). kube/owned.test.ts keeps them equal to the manifests.
 */

/** The Secret holding the webhook's serving certificate. */
export const CERT_SECRET_NAME = 'kubemod-webhook-server-cert';
/** The Service the API server calls the webhooks through. */
export const WEBHOOK_SERVICE_NAME = 'kubemod-webhook-service';
/** The MutatingWebhookConfiguration holding the dragnet and the ModRule defaulting webhooks. */
export const MUTATING_WEBHOOK_CONFIGURATION = 'kubemod-mutating-webhook-configuration';
/** The ValidatingWebhookConfiguration holding the ModRule validation webhook. */
export const VALIDATING_WEBHOOK_CONFIGURATION = 'kubemod-validating-webhook-configuration';
/** The dragnet webhook's name inside the MutatingWebhookConfiguration. */
export const DRAGNET_WEBHOOK = 'dragnet.kubemod.io';

/** The collection of MutatingWebhookConfigurations. */
export const MUTATING_WEBHOOK_CONFIGURATIONS_PATH =
  '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
/** The dragnet's MutatingWebhookConfiguration. */
export const MUTATING_WEBHOOK_CONFIGURATION_PATH = `${MUTATING_WEBHOOK_CONFIGURATIONS_PATH}/${MUTATING_WEBHOOK_CONFIGURATION}`;

/** ModRules in every namespace. */
export const MODRULES_PATH = '/apis/api.kubemod.io/v1beta1/modrules';

/** ModRules of one namespace. */
export function modRulesPath(namespace: string): string {
  return `/apis/api.kubemod.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/modrules`;
}

/** One ModRule's status subresource. */
export function modRuleStatusPath(namespace: string, name: string): string {
  return `${modRulesPath(namespace)}/${encodeURIComponent(name)}/status`;
}
