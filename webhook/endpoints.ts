/** Paths the API server calls, as the webhook configurations name them. */
export const WEBHOOK_PATHS = {
  dragnet: '/dragnet-webhook',
  validateModRule: '/validate-api-kubemod-io-v1beta1-modrule',
  mutateModRule: '/mutate-api-kubemod-io-v1beta1-modrule',
  podBinding: '/podbinding-webhook',
  dragnetProbe: '/dragnet-probe',
} as const;

/** An admission endpoint, as metrics and logs name it. */
export type Endpoint = 'dragnet' | 'validate-modrule' | 'mutate-modrule' | 'podbinding' | 'dragnet-probe';

/** What serves one path: the endpoint's name and its handler. */
export interface Route<H> {
  endpoint: Endpoint;
  handler: H;
}
