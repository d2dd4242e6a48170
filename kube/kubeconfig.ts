import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
// Type only: the module (~25 MiB of source once loaded) is imported lazily, on the kubeconfig path alone.
import type { KubeConfig } from '@kubernetes/client-node';
import { ClusterAccess } from './access';

type Env = Record<string, string | undefined>;

/** $HOME/.kube/config, as client-node's loadFromDefault looks for it on Linux (no HOME, no default file). */
export function homeKubeconfig(env: Env): string | undefined {
  return env.HOME ? join(env.HOME, '.kube', 'config') : undefined;
}

/** KUBECONFIG (one file, or several merged as kubectl does), else $HOME/.kube/config; throws when there is none. */
export async function loadKubeConfig(env: Env = process.env): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  // loadFromDefault silently falls back to http://localhost: say what is missing instead of retrying forever.
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f && existsSync(f));
  const home = homeKubeconfig(env);
  if (listed.length > 1)
    kc.loadFromDefault(); // merges the files, as kubectl does
  else if (listed.length === 1) kc.loadFromFile(listed[0]);
  else if (!env.KUBECONFIG && home && existsSync(home)) kc.loadFromFile(home);
  else throw new Error(`no kubeconfig found (KUBECONFIG=${env.KUBECONFIG ?? ''}, ${home ?? 'HOME unset'})`);
  if (!kc.getCurrentCluster()) throw new Error('the kubeconfig has no current context/cluster');
  return kc;
}

/** A kubeconfig's current cluster and user: tokens, client certificates, exec and auth plugins, proxies. */
export function kubeConfigAccess(kc: KubeConfig): ClusterAccess {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current context/cluster');
  return { server: cluster.server, apply: (opts) => kc.applyToHTTPSOptions(opts) };
}
