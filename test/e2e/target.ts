import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { createKubeClient, KubeClient } from '../../kube/kube';
import { kubeConfigAccess, loadKubeConfig } from '../../kube/kubeconfig';
import { ControlPlaneOptions, freePort, LocalControlPlane } from './controlplane';
import { ClusterSnapshot } from './snapshot';

/*
 * The cluster a suite runs against:
 * - KUBEBUILDER_ASSETS set: a control plane the suite starts itself on free loopback ports (controlplane.ts); only
 *   then may a case restart or freeze it, or ask for an API server without admission policies;
 * - else KUBECONFIG set: an existing cluster (e.g. ../shared/envtest-1.37/start.sh, kind); the operator under test
 *   runs in this process and the cluster's API server calls it at E2E_WEBHOOK_HOST (default: 127.0.0.1 when the API
 *   server is on loopback, else the kind network's gateway);
 * - neither: the suites skip themselves.
 */

export const ASSETS = process.env.KUBEBUILDER_ASSETS || '';
/** 'own': the suite starts its control plane; 'existing': KUBECONFIG's cluster; 'none': skip. */
export const E2E_MODE: 'own' | 'existing' | 'none' = ASSETS
  ? 'own'
  : process.env.KUBECONFIG
    ? 'existing'
    : 'none';
/** describe() when there is a cluster, else describe.skip. */
export const describeCluster = E2E_MODE === 'none' ? describe.skip : describe;
/** For cases that restart or freeze the control plane, or need one started with particular flags. */
export const describeOwn = E2E_MODE === 'own' ? describe : describe.skip;
export const itOwn = E2E_MODE === 'own' ? it : it.skip;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** A cluster under test, whoever started it. */
export interface E2eCluster {
  /** Started by this suite (it may restart or freeze it), or an existing one. */
  readonly own: LocalControlPlane | null;
  readonly server: string;
  readonly kubeConfigPath: string;
  /** kubectl: from KUBEBUILDER_ASSETS, else E2E_KUBECTL, else the unpacked 1.37 set; null when none is found. */
  readonly kubectl: string | null;
  /** Where the cluster's API server reaches this process's webhooks. */
  readonly webhookHost: string;
  /** The interface this process's webhook servers listen on (loopback when the API server is on this machine). */
  readonly listenHost: string;
  kubeConfig(): KubeConfig;
  /** An admin client (the kubeconfig's user). */
  admin(): KubeClient;
  /** The API server's CA (PEM), or null when the kubeconfig has none. */
  caCert(): string | null;
  /** A raw GET with the admin's credentials (/metrics, /readyz). */
  get(path: string): Promise<{ status: number; body: string }>;
  /** A port for a webhook server of this process: E2E_WEBHOOK_PORT first on an existing cluster, else a free one. */
  webhookPort(): Promise<number>;
  /**
   * Own control plane: stops it and removes its state. Existing cluster: deletes what the suite left of the
   * cluster-scoped objects it may create (snapshot.ts) and throws when something could not be.
   */
  stop(): Promise<void>;
}

function kubectlPath(): string | null {
  const candidates = [
    ASSETS && join(ASSETS, 'kubectl'),
    process.env.E2E_KUBECTL,
    '/tmp/modrule-envtest-1.37/bin/kubectl',
  ];
  return candidates.find((c): c is string => !!c && existsSync(c)) ?? null;
}

function rawGet(kc: KubeConfig, path: string): Promise<{ status: number; body: string }> {
  const cluster = kc.getCurrentCluster()!;
  return new Promise((resolve, reject) => {
    const options: Record<string, unknown> = { headers: {}, timeout: 10_000 };
    void kc.applyToHTTPSOptions(options as never).then(() => {
      const req = request(`${cluster.server}${path}`, options);
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    }, reject);
  });
}

/**
 * Where an API server at `server` reaches this process's webhooks: loopback for an own control plane, else
 * E2E_WEBHOOK_HOST, else loopback when the API server is on loopback too, else the kind network's gateway.
 */
export function webhookHostFor(server: string, own: boolean, env = process.env): string {
  if (own) return '127.0.0.1';
  return env.E2E_WEBHOOK_HOST || (LOOPBACK.has(new URL(server).hostname) ? '127.0.0.1' : '172.18.0.1');
}

/** Starts a control plane (own mode) or connects to the existing one; throws in mode 'none'. */
export async function startCluster(options: ControlPlaneOptions = {}): Promise<E2eCluster> {
  if (E2E_MODE === 'none') throw new Error('e2e: neither KUBEBUILDER_ASSETS nor KUBECONFIG is set');
  const cp = E2E_MODE === 'own' ? await LocalControlPlane.start(ASSETS, options) : null;
  const kc = cp ? cp.kubeConfig() : await loadKubeConfig();
  const cluster = kc.getCurrentCluster()!;
  const webhookHost = webhookHostFor(cluster.server, !!cp);
  let fixedPortTaken = false;
  const admin = createKubeClient(kubeConfigAccess(kc));
  const snapshot = cp ? null : await ClusterSnapshot.take(admin);
  return {
    own: cp,
    server: cluster.server,
    kubeConfigPath: cp ? cp.kubeConfigPath : (process.env.KUBECONFIG ?? '').split(':')[0],
    kubectl: kubectlPath(),
    webhookHost,
    listenHost: webhookHost === '127.0.0.1' ? '127.0.0.1' : '0.0.0.0',
    kubeConfig: () => kc,
    admin: () => admin,
    caCert: () =>
      cluster.caData
        ? Buffer.from(cluster.caData, 'base64').toString('utf8')
        : cluster.caFile
          ? readFileSync(cluster.caFile, 'utf8')
          : null,
    get: (path) => (cp ? cp.get(path) : rawGet(kc, path)),
    webhookPort: async () => {
      if (!cp && !fixedPortTaken && process.env.E2E_WEBHOOK_PORT) {
        fixedPortTaken = true;
        return Number(process.env.E2E_WEBHOOK_PORT);
      }
      return freePort();
    },
    stop: async () => {
      await cp?.stop();
      const problems = (await snapshot?.restore()) ?? [];
      if (problems.length > 0)
        throw new Error(`e2e: the cluster is not as it was found:\n${problems.join('\n')}`);
    },
  };
}
