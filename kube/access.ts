import type https from 'node:https';
import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';

/**
 * Where the API server is and how to authenticate to it: all createKubeClient needs. Two implementations: the
 * pod's service account (operator/incluster.ts, no dependencies) and a kubeconfig (operator/kubeconfig.ts, through
 * @kubernetes/client-node, loaded only on that path).
 */
export interface ClusterAccess {
  /** Base URL of the API server, possibly with a path prefix (https://host:port/prefix). */
  readonly server: string;
  /**
   * Adds authentication (headers.Authorization, auth) and TLS options (ca, cert, key, rejectUnauthorized,
   * servername; a proxy agent) to the options of one request. Called before every request, so rotated
   * credentials are picked up.
   */
  apply(opts: https.RequestOptions): Promise<void>;
}

/** Sets one header on request options, keeping the others. */
export function setHeader(opts: https.RequestOptions, name: string, value: string): void {
  opts.headers = { ...(opts.headers as Record<string, string> | undefined), [name]: value };
}

/**
 * The same credentials and trust as `access`, to another address of the same API server set (one API server by its
 * endpoint, e.g. https://10.0.0.3:6443): its certificate is still checked against the host `access` names (what the
 * API servers' certificates carry: kubernetes.default.svc, or the address a kubeconfig gives), not the address.
 */
export function accessVia(access: ClusterAccess, server: string): ClusterAccess {
  const host = new URL(access.server).hostname.replace(/^\[|\]$/g, '');
  return {
    server,
    async apply(opts) {
      await access.apply(opts);
      opts.checkServerIdentity = (_address, cert) => checkServerIdentity(host, cert);
      if (!isIP(host)) opts.servername = host;
    },
  };
}
