import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ClusterAccess } from '../../kube/access';
import { InClusterAccess } from '../../kube/incluster';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { serviceAccountToken } from './install';

/** A client with the operator ServiceAccount's own credentials, and how it got them. */
export interface ServiceAccountClient {
  client: KubeClient;
  /** The folder laid out as a pod's service-account mount ('' when a kubeconfig is used); the caller removes it. */
  dir: string;
  how: string;
}

/**
 * Credentials of the bundle's ServiceAccount (TokenRequest), so the bundle's RBAC is what is tested. Laid out as a
 * pod's service-account folder (token, ca.crt) and read by the in-cluster loader, so the operator runs on the
 * credentials path it has in a pod; a kubeconfig without a CA (insecure) keeps the kubeconfig path.
 */
export async function serviceAccountClient(
  admin: KubeClient,
  base: KubeConfig,
  namespace: string,
  serviceAccount: string,
): Promise<ServiceAccountClient> {
  const token = await serviceAccountToken(admin, namespace, serviceAccount);
  const cluster = base.getCurrentCluster()!;
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString('utf8')
    : cluster.caFile
      ? readFileSync(cluster.caFile, 'utf8')
      : null;
  let access: ClusterAccess;
  if (ca) {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-e2e-sa-'));
    writeFileSync(join(dir, 'token'), token, { mode: 0o600 });
    writeFileSync(join(dir, 'ca.crt'), ca);
    access = new InClusterAccess(cluster.server, { dir });
    return {
      client: createKubeClient(access),
      dir,
      how: 'in-cluster loader (service-account token + ca.crt)',
    };
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: serviceAccount, token }],
    contexts: [{ name: 'sa', cluster: cluster.name, user: serviceAccount }],
    currentContext: 'sa',
  });
  access = kubeConfigAccess(kc);
  return { client: createKubeClient(access), dir: '', how: 'kubeconfig (the cluster has no CA)' };
}

/** A kubeconfig (YAML) for one server and CA (PEM), authenticating with a bearer token. */
export function tokenKubeConfig(server: string, caPem: string, user: string, token: string): string {
  const ca = Buffer.from(caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: e2e, cluster: {server: '${server}', certificate-authority-data: '${ca}'}}]`,
    `users: [{name: ${user}, user: {token: '${token}'}}]`,
    `contexts: [{name: e2e, context: {cluster: e2e, user: ${user}}}]`,
    'current-context: e2e',
    '',
  ].join('\n');
}
