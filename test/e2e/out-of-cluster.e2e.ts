import { ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { JsonObject } from '../../util/json';
import { KubeClient } from '../../kube/kube';
import { modruleBinDir, modruleRootDir } from '../cli';
import { ClusterLedger, waitFor } from './cluster';
import { freePort } from './controlplane';
import { bindPod, defaultServiceAccount, schedulableNode } from './operator-harness';
import { describeOwn, E2eCluster, startCluster } from './target';

/*
 * docs/install.md, "3. Out of the cluster: a try-out", run as the page writes it (bash, kubectl 1.37, the real
 * bundle.yaml) against an API server of its own, with this machine's loopback as HOST and a free PORT; only the
 * `npm ci && npm run build` line is left out (the folder of test/cli.ts stands for a built checkout). Then what the
 * page promises: the operator on this machine serves every webhook of the bundle, the pod-binding webhook included
 * (a pod asking for its node reference gets it). Own control plane only: it rewires the bundle's webhooks.
 */

const ROOT = join(__dirname, '..', '..');
const NS = 'ooc-e2e';
const NODE = 'ooc-node';

/** The section's bash blocks: the recipe, then the wiring after a chart install. */
function outOfClusterBlocks(): string[] {
  const page = readFileSync(join(ROOT, 'docs', 'install.md'), 'utf8');
  const start = page.indexOf('### 3. Out of the cluster');
  const section = page.slice(start, page.indexOf('\n## ', start));
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
  if (blocks.length !== 2)
    throw new Error('docs/install.md: "3. Out of the cluster" has no longer two bash blocks');
  return blocks;
}

/** The recipe with this machine's HOST and PORT, without the build step; throws when the page changed shape. */
function runnable(recipe: string, port: number): string {
  const lines = recipe.split('\n');
  const build = lines.findIndex((l) => l.startsWith('npm ci && npm run build'));
  const host = lines.findIndex((l) => /^HOST=\S+ PORT=\S+/.test(l));
  if (build < 0 || host < 0) throw new Error(`the recipe has no build or HOST= line:\n${recipe}`);
  lines[host] = `HOST=127.0.0.1 PORT=${port}`;
  lines.splice(build, 1);
  return ['set -euo pipefail', ...lines].join('\n');
}

describeOwn('docs/install.md: the operator out of the cluster, as the page writes it', () => {
  let cluster: E2eCluster;
  let admin: KubeClient;
  let ledger: ClusterLedger;
  let recipe: ChildProcess | undefined;
  let output = '';
  let exited: string | undefined;
  let port = 0;
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    cluster = await startCluster();
    admin = cluster.admin();
    ledger = new ClusterLedger(admin);
    if (!cluster.kubectl) throw new Error('e2e: no kubectl in KUBEBUILDER_ASSETS');
    const dir = modruleRootDir();
    copyFileSync(join(ROOT, 'bundle.yaml'), join(dir, 'bundle.yaml'));
    port = await freePort();
    env = {
      ...process.env,
      KUBECONFIG: cluster.kubeConfigPath,
      PATH: [dirname(cluster.kubectl), modruleBinDir(), process.env.PATH].join(':'),
      // Not in the recipe: other runs on this machine may hold the default health port.
      MODRULE_HEALTH_PORT: String(await freePort()),
    };
    recipe = spawn('bash', ['-c', runnable(outOfClusterBlocks()[0], port)], {
      cwd: dir,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    recipe.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    recipe.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    recipe.on('exit', (code, signal) => (exited = `exited ${code ?? signal}`));
    await ledger.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await schedulableNode(admin, ledger, NODE, { 'ooc-node': 'yes' });
  });

  afterAll(async () => {
    if (recipe?.pid && !exited) {
      const closed = new Promise((resolve) => recipe!.on('close', resolve));
      process.kill(-recipe.pid, 'SIGTERM');
      await closed;
    }
    await cluster?.stop();
  });

  /** Fails at once with the recipe's output when it stopped. */
  function running(): void {
    if (exited) throw new Error(`the recipe ${exited}:\n${output}`);
  }

  it('serves the ModRule webhooks: a rule is admitted, validated and in force', async () => {
    const rule = {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'label-config', namespace: NS },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: '/metadata/labels/ooc', value: 'patched' }],
      },
    };
    await waitFor(
      'the recipe to serve the ModRule webhooks',
      async () => {
        running();
        await admin.request('POST', `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`, { body: rule });
        return true;
      },
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
    const cm = await waitFor('a ConfigMap patched by the dragnet', async () => {
      running();
      const name = `cm-${Date.now()}`;
      const created = await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } },
      });
      return ((created.metadata as JsonObject).labels as JsonObject | undefined)?.ooc ? created : undefined;
    });
    expect(((cm.metadata as JsonObject).labels as JsonObject).ooc).toBe('patched');
  });

  it('serves the pod-binding webhook: a pod asking for its node reference gets it', async () => {
    running();
    await defaultServiceAccount(admin, NS);
    await admin.request('POST', `/api/v1/namespaces/${NS}/pods`, {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'node-ref', annotations: { 'ref.kubemod.io/inject-node-ref': 'true' } },
        spec: {
          containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.9' }],
          automountServiceAccountToken: false,
        },
      },
    });
    await bindPod(admin, NS, 'node-ref', NODE);
    const annotations = await waitFor(
      'the node reference on the pod',
      async () => {
        running();
        const pod = await admin.request('GET', `/api/v1/namespaces/${NS}/pods/node-ref`);
        const a = (pod.metadata as JsonObject).annotations as JsonObject;
        return a['ref.kubemod.io/node'] ? a : undefined;
      },
      20_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
    expect(annotations['ref.kubemod.io/node']).toBe(NODE);
  });

  it("wires a chart install's live configurations as the page writes it: URLs by name, caBundle kept", async () => {
    running();
    const script = `set -euo pipefail\nHOST=127.0.0.1 PORT=${port}\n${outOfClusterBlocks()[1]}`;
    const wired = await runBash(script, modruleRootDir(), env);
    expect(wired).toMatchObject({ code: 0, stderr: '' });
    const hooks = [
      ...((await admin.request('GET', `${WEBHOOKS}/mutatingwebhookconfigurations/${MUTATING}`))
        .webhooks as JsonObject[]),
      ...((await admin.request('GET', `${WEBHOOKS}/validatingwebhookconfigurations/${VALIDATING}`))
        .webhooks as JsonObject[]),
    ];
    const base = `https://127.0.0.1:${port}`;
    expect(Object.fromEntries(hooks.map((h) => [h.name, (h.clientConfig as JsonObject).url]))).toEqual({
      'mmodrule.kubemod.io': `${base}/mutate-api-kubemod-io-v1beta1-modrule`,
      'dragnet.kubemod.io': `${base}/dragnet-webhook`,
      'dragnet-probe.kubemod.io': `${base}/dragnet-probe`,
      'podbinding.kubemod.io': `${base}/podbinding-webhook`,
      'vmodrule.kubemod.io': `${base}/validate-api-kubemod-io-v1beta1-modrule`,
    });
    for (const h of hooks) expect((h.clientConfig as JsonObject).caBundle).toBeTruthy();
  });
});

const WEBHOOKS = '/apis/admissionregistration.k8s.io/v1';
const MUTATING = 'kubemod-mutating-webhook-configuration';
const VALIDATING = 'kubemod-validating-webhook-configuration';

function runBash(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}
