import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newBundle } from '../operator/certs/certificates';
import { loadClusterAccess } from './credentials';
import { InClusterAccess } from './incluster';
import { loadKubeConfig } from './kubeconfig';

const ROOT = join(__dirname, '..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

function kubeconfigFile(dir: string, server: string): string {
  const file = join(dir, 'config');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "${server}"}}]`,
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
  return file;
}

describe('loadClusterAccess (the order of client-node loadFromDefault)', () => {
  const ca = newBundle(['127.0.0.1'], new Date()).caCert;
  const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
  let sa: string;
  let home: string;
  beforeEach(() => {
    sa = temp('modrule-sa-');
    writeFileSync(join(sa, 'token'), 'pod-token');
    writeFileSync(join(sa, 'ca.crt'), ca);
    home = temp('modrule-home-');
  });

  it('uses the service account in a pod without KUBECONFIG or ~/.kube/config', async () => {
    const access = await loadClusterAccess({ ...pod, HOME: home }, { dir: sa });
    expect(access).toBeInstanceOf(InClusterAccess);
    expect(access.server).toBe('https://10.96.0.1:443');
  });

  it('prefers KUBECONFIG over the service account', async () => {
    const file = kubeconfigFile(temp('modrule-kc-'), 'https://10.1.2.3:6443');
    const access = await loadClusterAccess({ ...pod, HOME: home, KUBECONFIG: file }, { dir: sa });
    expect(access).not.toBeInstanceOf(InClusterAccess);
    expect(access.server).toBe('https://10.1.2.3:6443');
  });

  it('prefers $HOME/.kube/config over the service account', async () => {
    mkdirSync(join(home, '.kube'));
    kubeconfigFile(join(home, '.kube'), 'https://10.4.5.6:6443');
    const access = await loadClusterAccess({ ...pod, HOME: home }, { dir: sa });
    expect(access.server).toBe('https://10.4.5.6:6443');
  });

  it('says what it looked for when there is nothing', async () => {
    const empty = temp('modrule-sa-');
    await expect(loadClusterAccess({ HOME: home }, { dir: empty })).rejects.toThrow(
      `not running in a cluster (no ${join(empty, 'token')}) and no kubeconfig found`,
    );
  });

  it('says which variables are missing when the token is there but the service env is not', async () => {
    await expect(loadClusterAccess({ HOME: home }, { dir: sa })).rejects.toThrow(
      /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT/,
    );
  });
});

describe('loadKubeConfig', () => {
  it('says what is missing instead of falling back to localhost', async () => {
    await expect(loadKubeConfig({ HOME: '/nonexistent-home' })).rejects.toThrow(/no kubeconfig found/);
  });

  it('loads the file KUBECONFIG names', async () => {
    const file = kubeconfigFile(temp('kc-'), 'https://10.1.2.3:6443');
    const kc = await loadKubeConfig({ KUBECONFIG: file });
    expect(kc.getCurrentCluster()?.server).toBe('https://10.1.2.3:6443');
  });
});

/** Runs a script under plain Node (sources through test/ts-register.js); returns what it printed. */
function node(script: string, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['-r', join(ROOT, 'test', 'ts-register.js'), '-e', script],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
}

// Records every module request naming @kubernetes/client-node, whether by import or by a lazy import().
const RECORD = `
const Module = require('node:module');
const seen = new Set();
const load = Module._load;
Module._load = function (request, ...rest) {
  if (request.includes('@kubernetes/client-node')) seen.add(request);
  return load.call(this, request, ...rest);
};
const loaded = () => [...seen, ...Object.keys(require.cache).filter((k) => k.includes('@kubernetes/client-node'))];
`;

describe("the operator's module graph", () => {
  const modules = (dir: string) =>
    readdirSync(join(ROOT, dir))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && f !== 'testing.ts')
      .map((f) => `./${dir}/${f}`);

  it('does not load @kubernetes/client-node, in-cluster included; a kubeconfig does', async () => {
    const entries = [
      './cli/main.ts',
      ...modules('cli'),
      ...modules('operator'),
      ...modules('kube'),
      ...modules('webhook'),
      ...modules('util'),
    ];
    expect(entries).toEqual(expect.arrayContaining(['./cli/operator.ts', './kube/credentials.ts']));
    const sa = temp('modrule-sa-');
    writeFileSync(join(sa, 'token'), 'pod-token');
    writeFileSync(join(sa, 'ca.crt'), newBundle(['127.0.0.1'], new Date()).caCert);
    const kubeconfig = kubeconfigFile(temp('modrule-kc-'), 'https://10.1.2.3:6443');
    const out = await node(
      `${RECORD}
      for (const m of ${JSON.stringify(entries)}) require(m);
      const { loadClusterAccess } = require('./kube/credentials.ts');
      const { createKubeClient } = require('./kube/kube.ts');
      (async () => {
        const pod = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '6443', HOME: '/nonexistent' };
        createKubeClient(await loadClusterAccess(pod, { dir: ${JSON.stringify(sa)} }));
        const inCluster = loaded();
        createKubeClient(await loadClusterAccess({ KUBECONFIG: ${JSON.stringify(kubeconfig)} }));
        console.log(JSON.stringify({ inCluster, kubeconfig: loaded() }));
      })();`,
    );
    const result = JSON.parse(out) as { inCluster: string[]; kubeconfig: string[] };
    expect(result.inCluster).toEqual([]);
    expect(result.kubeconfig).toContain('@kubernetes/client-node');
  }, 60_000);
});
