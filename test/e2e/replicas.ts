import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { send } from '../../webhook/testing';
import { remove, waitFor } from './cluster';
import { freePorts, LocalControlPlane } from './controlplane';
import { tokenKubeConfig } from './credentials';
import { serviceAccountToken } from './install';

/*
 * Operator replicas as a Deployment runs them, without a kubelet: each one a `node dist/cli/main.js operator` process
 * with the bundle ServiceAccount's token in a kubeconfig for one of the API servers, POD_NAMESPACE and POD_IP (this
 * machine's own address: the API server refuses loopback endpoints), each on its own webhook and health port; and the
 * webhook Service's EndpointSlices written as the endpoint controller would (one slice per set of ports, the ports
 * named as the Service's), so that API servers with --enable-aggregator-routing call the replicas listed there.
 */

const ROOT = join(__dirname, '..', '..');
const NAMESPACE = 'kubemod-system';
const SERVICE = 'kubemod-webhook-service';
const SLICES = `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`;
const MANAGED_BY = 'e2e.modrule.io';

/** This machine's first non-loopback IPv4 address, or null when it has none. */
export function machineAddress(): string | null {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return null;
}

/** One operator process. */
export interface Replica {
  readonly name: string;
  readonly port: number;
  readonly healthPort: number;
  /** The API server it talks to (index into the control plane's servers). */
  readonly apiServer: number;
  readonly child: ChildProcess;
  /** Resolves with the exit code (or the signal) once the process is gone. */
  readonly exited: Promise<number | string>;
  /** Its /metrics. */
  metrics(): Promise<string>;
  /** The last lines of its log. */
  logTail(lines?: number): string;
}

/** How a replica is listed in the webhook Service's endpoints. */
export interface Listing {
  replica: Replica;
  ready?: boolean;
  terminating?: boolean;
}

/** Starts and lists operator replicas against a control plane with several API servers. */
export class Replicas {
  private readonly dir = mkdtempSync(join(tmpdir(), 'modrule-e2e-replicas-'));
  private readonly all: Replica[] = [];
  private kubeconfigs: string[] = [];

  constructor(
    private readonly cp: LocalControlPlane,
    private readonly admin: KubeClient,
    /** The address every replica listens on and is listed at. */
    readonly address: string,
  ) {}

  /** A kubeconfig per API server with a token of the bundle's ServiceAccount (as a pod's, but by kubeconfig). */
  async init(): Promise<void> {
    const token = await serviceAccountToken(this.admin, NAMESPACE, 'kubemod-operator', 7200);
    const ca = this.cp.caCertPem;
    this.kubeconfigs = this.cp.servers.map((server, i) => {
      const file = join(this.dir, `kubeconfig-${i}`);
      writeFileSync(file, tokenKubeConfig(server, ca, 'operator', token), { mode: 0o600 });
      return file;
    });
  }

  /** Starts `node dist/cli/main.js operator` talking to API server `apiServer`; resolves once /readyz says ready. */
  async start(name: string, apiServer: number): Promise<Replica> {
    const [port, healthPort] = await freePorts(2);
    const logFile = join(this.dir, `${name}.log`);
    const log = openSync(logFile, 'a');
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), 'operator'], {
      env: {
        PATH: process.env.PATH,
        KUBECONFIG: this.kubeconfigs[apiServer],
        POD_NAMESPACE: NAMESPACE,
        POD_IP: this.address,
        MODRULE_WEBHOOK_PORT: String(port),
        MODRULE_HEALTH_PORT: String(healthPort),
        MODRULE_LOG_LEVEL: process.env.E2E_LOG ? 'debug' : 'info',
      },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    const exited = new Promise<number | string>((resolve) =>
      child.once('exit', (code, signal) => resolve(code ?? signal ?? '')),
    );
    const health = `http://127.0.0.1:${healthPort}`;
    const logTail = (lines = 20) => {
      try {
        return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    };
    const replica: Replica = {
      name,
      port,
      healthPort,
      apiServer,
      child,
      exited,
      metrics: async () => (await send(`${health}/metrics`)).body,
      logTail,
    };
    this.all.push(replica);
    await waitFor(
      `replica ${name} to be ready`,
      async () => {
        if (child.exitCode !== null) throw new Error(`replica ${name} exited:\n${logTail()}`);
        return (await send(`${health}/readyz`)).status === 200;
      },
      60_000,
      100,
    );
    return replica;
  }

  /**
   * Makes the webhook Service's EndpointSlices list exactly these replicas (one slice per replica, since each has
   * its own ports), as the endpoint controller would: new and changed slices first, then the ones no longer listed.
   */
  async publish(listings: readonly Listing[]): Promise<void> {
    const wanted = new Map(listings.map((l) => [sliceName(l.replica), sliceOf(this.address, l)]));
    for (const [name, slice] of wanted) {
      try {
        const current = await this.admin.request('GET', `${SLICES}/${name}`);
        const meta = {
          ...(slice.metadata as JsonObject),
          resourceVersion: (current.metadata as JsonObject).resourceVersion,
        };
        await this.admin.request('PUT', `${SLICES}/${name}`, { body: { ...slice, metadata: meta } });
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 404)) throw err;
        await this.admin.request('POST', SLICES, { body: slice });
      }
    }
    const listed = await this.admin.request('GET', SLICES, {
      query: { labelSelector: `endpointslice.kubernetes.io/managed-by=${MANAGED_BY}` },
    });
    for (const item of (listed.items ?? []) as JsonObject[]) {
      const name = String((item.metadata as JsonObject).name);
      if (!wanted.has(name)) await remove(this.admin, `${SLICES}/${name}`);
    }
  }

  /** SIGTERM, as the kubelet sends it; resolves once the process is gone (it drains for 5 s first). */
  async terminate(replica: Replica): Promise<number | string> {
    replica.child.kill('SIGTERM');
    return replica.exited;
  }

  /** Stops every replica still running (SIGKILL), removes the slices and the files. */
  async stop(): Promise<void> {
    for (const r of this.all)
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await Promise.all(this.all.map((r) => r.exited));
    await this.publish([]).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function sliceName(replica: Replica): string {
  return `${SERVICE}-e2e-${replica.port}`;
}

function sliceOf(address: string, listing: Listing): JsonObject {
  const { replica, ready = true, terminating = false } = listing;
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: sliceName(replica),
      namespace: NAMESPACE,
      labels: { 'kubernetes.io/service-name': SERVICE, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY },
    },
    addressType: 'IPv4',
    endpoints: [
      {
        addresses: [address],
        conditions: { ready: ready && !terminating, serving: !terminating || ready, terminating },
        targetRef: { kind: 'Pod', namespace: NAMESPACE, name: replica.name },
      },
    ],
    // Named as the Service's ports: the API server picks the endpoint port by the Service port's name.
    ports: [
      { name: 'webhook', port: replica.port, protocol: 'TCP' },
      { name: 'metrics', port: replica.healthPort, protocol: 'TCP' },
    ],
  };
}
