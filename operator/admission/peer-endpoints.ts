import { JsonObject } from '../../util/json';

/*
 * Where the peer replicas listen, from the webhook Service's EndpointSlices, as the API server itself finds them when
 * it calls a webhook through a Service's endpoints: each endpoint's address with the slice's port whose name is the
 * Service port's (the endpoint controller writes one slice per distinct set of ports, so replicas whose pods listen on
 * different ports are in different slices). A replica is never addressed at its own webhook port by assumption.
 */

/** One replica's webhook endpoint. */
export interface PeerEndpoint {
  address: string;
  port: number;
  /** Ready (no condition says otherwise): the API server calls only ready endpoints. */
  ready: boolean;
}

/**
 * The port of a slice's `ports` named `portName`; a slice with one port and no port of that name (a Service with one
 * unnamed port) gives that one; null when there is none (the caller falls back to its own webhook port).
 */
export function slicePort(slice: JsonObject, portName: string): number | null {
  const ports = (Array.isArray(slice.ports) ? slice.ports : []).filter(
    (p): p is JsonObject => typeof p === 'object' && p !== null && !Array.isArray(p),
  );
  const named = ports.find((p) => (p.name ?? '') === portName) ?? (ports.length === 1 ? ports[0] : undefined);
  return typeof named?.port === 'number' ? named.port : null;
}

/**
 * The endpoints of an EndpointSlice, not-ready ones included (a replica starting up computes the registration too),
 * terminating ones left out; at the slice's webhook port, else at `fallbackPort`.
 */
export function sliceEndpoints(slice: JsonObject, portName: string, fallbackPort: number): PeerEndpoint[] {
  const port = slicePort(slice, portName) ?? fallbackPort;
  const endpoints = Array.isArray(slice.endpoints) ? slice.endpoints : [];
  return endpoints.flatMap((e) => {
    const ep = e as JsonObject;
    const conditions = (ep.conditions ?? {}) as JsonObject;
    if (conditions.terminating === true || !Array.isArray(ep.addresses)) return [];
    const ready = conditions.ready !== false;
    return ep.addresses
      .filter((a): a is string => typeof a === 'string')
      .map((address) => ({ address, port, ready }));
  });
}

/** The base URL of an endpoint (an IPv6 address in brackets). */
export function endpointUrl(endpoint: Pick<PeerEndpoint, 'address' | 'port'>): string {
  const host = endpoint.address.includes(':') ? `[${endpoint.address}]` : endpoint.address;
  return `https://${host}:${endpoint.port}`;
}

/**
 * The peers among these slices' endpoints by base URL (ready when any slice lists it ready), this replica's own
 * endpoint (`self`: its address and webhook port) left out.
 */
export function peerEndpoints(
  slices: Iterable<PeerEndpoint[]>,
  self?: Pick<PeerEndpoint, 'address' | 'port'>,
): Map<string, PeerEndpoint> {
  const peers = new Map<string, PeerEndpoint>();
  for (const endpoints of slices)
    for (const ep of endpoints) {
      if (self && ep.address === self.address && ep.port === self.port) continue;
      const url = endpointUrl(ep);
      if (!peers.get(url)?.ready) peers.set(url, ep);
    }
  return peers;
}
