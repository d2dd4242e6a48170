import { ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { issueServingCert, newCa } from '../../webhook/certs';
import { messageOf } from '../../util/errors';
import { tokenKubeConfig } from './credentials';

/*
 * A throw-away control plane for the e2e suite, the way controller-runtime's envtest does it: etcd and
 * kube-apiserver from KUBEBUILDER_ASSETS on free loopback ports, state in a temp dir, a static admin token.
 * A controller-manager and a scheduler when asked; never a kubelet.
 */

/** A free TCP port on 127.0.0.1 (free when asked; the caller binds it soon after). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

/** `count` distinct free loopback ports: all held open at once, so the kernel cannot hand one out twice. */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((server) => {
      const address = server.address();
      return typeof address === 'object' && address ? address.port : 0;
    });
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Sends SIGTERM, then SIGKILL after graceMs (kube-apiserver may ignore SIGTERM for a while). */
async function terminate(child: ChildProcess, graceMs: number): Promise<void> {
  if (exited(child)) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

/** What to run besides etcd and kube-apiserver. */
export interface ControlPlaneOptions {
  controllerManager?: boolean;
  scheduler?: boolean;
  /** false: an API server that serves no admission policies (as before Kubernetes 1.30/1.36). */
  admissionPolicies?: boolean;
  /** How many kube-apiservers on the one etcd (each on its own port, same certificates and tokens); default 1. */
  apiServers?: number;
  /**
   * --enable-aggregator-routing: the API servers call webhooks at the endpoints of their Service (its EndpointSlices)
   * instead of its cluster IP, as a control plane without kube-proxy on its nodes does.
   */
  aggregatorRouting?: boolean;
}

/** A running etcd + kube-apiserver; stop() ends both and removes their state. */
export class LocalControlPlane {
  private etcd: ChildProcess | null = null;
  /** The kube-apiservers, by index (0 is `server`). */
  private readonly apiservers: (ChildProcess | null)[] = [];
  private controllerManager: ChildProcess | null = null;
  private scheduler: ChildProcess | null = null;
  private etcdPaused = false;
  private readonly pausedApiServers = new Set<number>();

  private constructor(
    private readonly assets: string,
    private readonly dir: string,
    private readonly etcdDataDir: string,
    readonly server: string,
    private readonly ports: {
      etcd: number;
      peer: number;
      apiservers: number[];
      controllerManager: number;
      scheduler: number;
    },
    private readonly caCert: string,
    private readonly token: string,
    private readonly options: ControlPlaneOptions = {},
  ) {}

  /** Every API server's URL (the first is `server`). */
  get servers(): string[] {
    return this.ports.apiservers.map((port) => `https://127.0.0.1:${port}`);
  }

  /**
   * Starts etcd and kube-apiserver from the binaries in `assets` (envtest's KUBEBUILDER_ASSETS), and
   * kube-controller-manager too when asked and the folder has it (garbage collection of owned objects, namespace
   * deletion), and kube-scheduler when asked and the folder has it (binds pods to Nodes that look schedulable).
   */
  static async start(assets: string, options: ControlPlaneOptions = {}): Promise<LocalControlPlane> {
    for (const bin of ['etcd', 'kube-apiserver']) {
      if (!existsSync(join(assets, bin))) throw new Error(`KUBEBUILDER_ASSETS=${assets} has no ${bin}`);
    }
    // A port found free can be taken by another process before etcd or the API server binds it: try new ports.
    for (let attempt = 1; ; attempt++) {
      try {
        return await LocalControlPlane.startOnce(assets, options);
      } catch (err) {
        if (attempt >= 3 || !/address already in use/.test(messageOf(err))) throw err;
      }
    }
  }

  private static async startOnce(assets: string, options: ControlPlaneOptions): Promise<LocalControlPlane> {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-e2e-'));
    // etcd fsyncs every write: on tmpfs the 1,000-rule test does not wait on the disk.
    const shm = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/modrule-e2e-etcd-') : join(dir, 'etcd');
    const count = Math.max(1, options.apiServers ?? 1);
    const [etcd, peer, controllerManager, scheduler, ...apiservers] = await freePorts(4 + count);
    const ports = { etcd, peer, apiservers, controllerManager, scheduler };
    const now = new Date();
    const ca = newCa(now, 2, 'modrule-e2e-ca');
    const serving = issueServingCert(ca, ['127.0.0.1', 'localhost'], now, 1);
    const sa = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const token = randomBytes(24).toString('hex');
    writeFileSync(join(dir, 'ca.crt'), ca.cert);
    writeFileSync(join(dir, 'apiserver.crt'), serving.cert);
    writeFileSync(join(dir, 'apiserver.key'), serving.key, { mode: 0o600 });
    writeFileSync(join(dir, 'sa.key'), sa.privateKey, { mode: 0o600 });
    writeFileSync(join(dir, 'sa.pub'), sa.publicKey);
    writeFileSync(join(dir, 'tokens.csv'), `${token},e2e-admin,e2e-admin,"system:masters"\n`, {
      mode: 0o600,
    });
    const cp = new LocalControlPlane(
      assets,
      dir,
      shm,
      `https://127.0.0.1:${apiservers[0]}`,
      ports,
      ca.cert,
      token,
      options,
    );
    writeFileSync(join(dir, 'kubeconfig'), cp.kubeConfigYaml(), { mode: 0o600 });
    try {
      await cp.startEtcd();
      for (let i = 0; i < count; i++) await cp.startApiServer(i);
      if (options.controllerManager && existsSync(join(assets, 'kube-controller-manager'))) {
        cp.startControllerManager();
      }
      if (options.scheduler && existsSync(join(assets, 'kube-scheduler'))) cp.startScheduler();
    } catch (err) {
      await cp.stop();
      throw err;
    }
    return cp;
  }

  /** Admin credentials (static token, member of system:masters). */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeConfigYaml());
    return kc;
  }

  /** Admin credentials for API server `index`. */
  kubeConfigOf(index: number): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeConfigYaml(this.servers[index]));
    return kc;
  }

  /** A kubeconfig file for kubectl. */
  get kubeConfigPath(): string {
    return join(this.dir, 'kubeconfig');
  }

  /** kubectl from the assets folder, when it has one. */
  get kubectl(): string | null {
    const path = join(this.assets, 'kubectl');
    return existsSync(path) ? path : null;
  }

  private kubeConfigYaml(server = this.server): string {
    return tokenKubeConfig(server, this.caCert, 'e2e-admin', this.token);
  }

  /** The API servers' CA (PEM). */
  get caCertPem(): string {
    return this.caCert;
  }

  private spawnLogged(name: string, bin: string, args: string[]): ChildProcess {
    const log = openSync(join(this.dir, `${name}.log`), 'a');
    const child = spawn(join(this.assets, bin), args, { stdio: ['ignore', log, log] });
    closeSync(log);
    return child;
  }

  /** The last lines a component logged (for failure messages); the second API server is `apiserver-1`. */
  logTail(name: string, lines = 30): string {
    try {
      return readFileSync(join(this.dir, `${name}.log`), 'utf8')
        .split('\n')
        .slice(-lines)
        .join('\n');
    } catch {
      return '';
    }
  }

  private async startEtcd(): Promise<void> {
    const { etcd, peer } = this.ports;
    this.etcd = this.spawnLogged('etcd', 'etcd', [
      '--name=e2e',
      `--data-dir=${this.etcdDataDir}`,
      `--listen-client-urls=http://127.0.0.1:${etcd}`,
      `--advertise-client-urls=http://127.0.0.1:${etcd}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=e2e=http://127.0.0.1:${peer}`,
    ]);
    await this.until('etcd', 20_000, async () => {
      const res = await fetch(`http://127.0.0.1:${etcd}/health`);
      return res.ok && (await res.text()).includes('true');
    });
  }

  private apiServerArgs(index: number): string[] {
    const d = this.dir;
    return [
      `--etcd-servers=http://127.0.0.1:${this.ports.etcd}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${this.ports.apiservers[index]}`,
      ...(this.options.aggregatorRouting ? ['--enable-aggregator-routing=true'] : []),
      // 1.37 refuses a loopback advertise address for the "kubernetes" Endpoints: no reconciler (no Service here
      // has endpoints anyway; webhooks are called by URL).
      '--endpoint-reconciler-type=none',
      `--tls-cert-file=${join(d, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(d, 'apiserver.key')}`,
      `--token-auth-file=${join(d, 'tokens.csv')}`,
      `--service-account-key-file=${join(d, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(d, 'sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      '--api-audiences=https://kubernetes.default.svc',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      '--profiling=false',
      ...(this.options.admissionPolicies !== false
        ? [
            '--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,ResourceQuota,' +
              'MutatingAdmissionPolicy,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook',
          ]
        : [
            '--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,ResourceQuota,' +
              'MutatingAdmissionWebhook,ValidatingAdmissionWebhook',
            '--disable-admission-plugins=MutatingAdmissionPolicy,ValidatingAdmissionPolicy',
            '--runtime-config=' +
              ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings', 'validatingadmissionpolicies']
                .concat('validatingadmissionpolicybindings')
                .map((r) => `admissionregistration.k8s.io/v1/${r}=false`)
                .join(','),
          ]),
    ];
  }

  /** Whether kube-controller-manager runs (garbage collector, namespace controller). */
  get hasControllerManager(): boolean {
    return this.controllerManager !== null && !exited(this.controllerManager);
  }

  private startControllerManager(): void {
    const d = this.dir;
    const kubeconfig = join(d, 'kubeconfig');
    // The controllers a cluster's objects need here: no nodes run, so the node and volume ones stay off.
    this.controllerManager = this.spawnLogged('controller-manager', 'kube-controller-manager', [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${this.ports.controllerManager}`,
      '--leader-elect=false',
      `--service-account-private-key-file=${join(d, 'sa.key')}`,
      `--root-ca-file=${join(d, 'ca.crt')}`,
      '--controllers=*,-node-ipam-controller,-node-lifecycle-controller,-persistentvolume-attach-detach-controller,' +
        '-persistentvolume-binder-controller,-persistentvolume-expander-controller,-ttl-controller,' +
        '-bootstrap-signer-controller,-token-cleaner-controller',
    ]);
  }

  /** Whether kube-scheduler runs. */
  get hasScheduler(): boolean {
    return this.scheduler !== null && !exited(this.scheduler);
  }

  private startScheduler(): void {
    const kubeconfig = join(this.dir, 'kubeconfig');
    this.scheduler = this.spawnLogged('scheduler', 'kube-scheduler', [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${this.ports.scheduler}`,
      '--leader-elect=false',
    ]);
  }

  private static logName(index: number): string {
    return index === 0 ? 'apiserver' : `apiserver-${index}`;
  }

  private async startApiServer(index: number): Promise<void> {
    const name = LocalControlPlane.logName(index);
    this.apiservers[index] = this.spawnLogged(name, 'kube-apiserver', this.apiServerArgs(index));
    await this.waitReady(60_000, index);
  }

  /** Resolves when API server `index`'s /readyz answers ok (fails after 60 s, or at once when the process exited). */
  async waitReady(timeoutMs = 60_000, index = 0): Promise<void> {
    const name = LocalControlPlane.logName(index);
    await this.until(name, timeoutMs, async () => (await this.get('/readyz', index)).body === 'ok');
  }

  /** GET with the admin token from API server `index`, trusting only our CA. */
  get(path: string, index = 0): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(`${this.servers[index]}${path}`, {
        ca: this.caCert,
        headers: { Authorization: `Bearer ${this.token}` },
        agent: false,
        timeout: 5000,
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });
  }

  /** Polls `check` until true; `what` is the component's log name (etcd, apiserver, apiserver-1, ...). */
  private async until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
    const start = Date.now();
    const index = what === 'apiserver' ? 0 : Number(what.split('-')[1]);
    const child = what === 'etcd' ? this.etcd : this.apiservers[index];
    for (;;) {
      if (child && exited(child)) {
        throw new Error(`${what} exited:\n${this.logTail(what)}`);
      }
      try {
        if (await check()) return;
      } catch {
        // not listening yet
      }
      if (Date.now() - start > timeoutMs) {
        throw new Error(`${what} not ready in ${timeoutMs} ms:\n${this.logTail(what)}`);
      }
      await sleep(100);
    }
  }

  /** Stops API server `index`, keeps it down for downMs, starts it again on the same port; resolves when ready. */
  async restartApiServer(downMs = 0, index = 0): Promise<void> {
    const child = this.apiservers[index];
    if (child) await terminate(child, 3000);
    await sleep(downMs);
    await this.startApiServer(index);
  }

  /** Freezes etcd (SIGSTOP): the API server stays up but every storage call hangs. */
  pauseEtcd(): void {
    this.etcd?.kill('SIGSTOP');
    this.etcdPaused = true;
  }

  /** Freezes API server `index` (SIGSTOP): it accepts nothing, and its watches fall behind, until resumed. */
  pauseApiServer(index: number): void {
    this.apiservers[index]?.kill('SIGSTOP');
    this.pausedApiServers.add(index);
  }

  resumeApiServer(index: number): void {
    this.apiservers[index]?.kill('SIGCONT');
    this.pausedApiServers.delete(index);
  }

  resumeEtcd(): void {
    this.etcd?.kill('SIGCONT');
    this.etcdPaused = false;
  }

  async stop(): Promise<void> {
    if (this.etcdPaused) this.resumeEtcd();
    for (const index of [...this.pausedApiServers]) this.resumeApiServer(index);
    if (this.scheduler) await terminate(this.scheduler, 3000);
    if (this.controllerManager) await terminate(this.controllerManager, 3000);
    for (const child of this.apiservers) if (child) await terminate(child, 3000);
    if (this.etcd) await terminate(this.etcd, 3000);
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.etcdDataDir, { recursive: true, force: true });
  }
}
