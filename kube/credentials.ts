import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterAccess } from './access';
import { InClusterAccess, InClusterOptions, SERVICE_ACCOUNT_DIR } from './incluster';
import { homeKubeconfig, kubeConfigAccess, loadKubeConfig } from './kubeconfig';

type Env = Record<string, string | undefined>;

/**
 * The operator's access to its cluster, in the order of client-node's KubeConfig.loadFromDefault (and client-go's
 * default loading rules): KUBECONFIG when set and non-empty, else $HOME/.kube/config when it exists, else the pod's
 * service account when its token file exists. Nothing found is an error (loadFromDefault would fall back to
 * http://localhost:8080). @kubernetes/client-node is loaded on the kubeconfig paths only.
 */
export async function loadClusterAccess(
  env: Env = process.env,
  inCluster: InClusterOptions = {},
): Promise<ClusterAccess> {
  const home = homeKubeconfig(env);
  if (env.KUBECONFIG || (home && existsSync(home))) return kubeConfigAccess(await loadKubeConfig(env));
  const tokenFile = join(inCluster.dir ?? SERVICE_ACCOUNT_DIR, 'token');
  if (existsSync(tokenFile)) return InClusterAccess.fromEnv(env, inCluster);
  throw new Error(
    `not running in a cluster (no ${tokenFile}) and no kubeconfig found (KUBECONFIG unset, ${home ?? 'HOME unset'})`,
  );
}
