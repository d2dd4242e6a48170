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

/** The route table: each webhook path to its endpoint's handler, in the order the 404 answer lists them. */
export function routeTable<H>(handlers: Readonly<Record<Endpoint, H>>): ReadonlyMap<string, Route<H>> {
  const route = (endpoint: Endpoint): Route<H> => ({ endpoint, handler: handlers[endpoint] });
  return new Map([
    [WEBHOOK_PATHS.dragnet, route('dragnet')],
    [WEBHOOK_PATHS.validateModRule, route('validate-modrule')],
    [WEBHOOK_PATHS.mutateModRule, route('mutate-modrule')],
    [WEBHOOK_PATHS.podBinding, route('podbinding')],
    [WEBHOOK_PATHS.dragnetProbe, route('dragnet-probe')],
  ]);
}
