import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { createKubeClient, KubeApiError, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { unpackOciArchive, UnpackedImage } from '../../image/oci';
import { NODE } from '../../image/sources';
import { send as get } from '../../webhook/testing';
import { apply, ClusterLedger, waitFor, webhookManifests } from './cluster';
import { freePort } from './controlplane';
import { E2E_MODE, E2eCluster, startCluster } from './target';
import { Container, idsOf, runContainer } from './container';
import { installBundle, serviceAccountToken } from './install';

/*
 * The image, built here with buildah (`node dist/image/main.js build`, what `make image` runs without Docker),
 * unpacked from its OCI archive and run as `operator` (its entrypoint, its user, read-only root filesystem) against a
 * real Kubernetes 1.37 control plane with the bundle's ServiceAccount token mounted as in a pod: the rules load, a
 * ModRule is validated and reported Ready, a dragnet review is patched, /metrics answers, SIGTERM stops it cleanly.
 * Opt-in (MODRULE_E2E_IMAGE=1, set by .ci/run): it needs root, buildah, util-linux's unshare, the npm registry for
 * Node's binary and apt for three Debian packages; about a minute, once Node's binary and re2 built for it (a few
 * minutes, image/addon.ts) are in the cache ($MODRULE_IMAGE_CACHE; .ci/unit-on-image-node fills the same one).
 */

const OPTED_IN = process.env.MODRULE_E2E_IMAGE === '1';
if (!OPTED_IN || E2E_MODE === 'none')
  process.stderr.write(
    'e2e: image test skipped (needs MODRULE_E2E_IMAGE=1 and a cluster, KUBEBUILDER_ASSETS or KUBECONFIG; see .ci/run)\n',
  );
const describeImage = OPTED_IN && E2E_MODE !== 'none' ? describe : describe.skip;

const ROOT = join(__dirname, '..', '..');
const run = randomBytes(3).toString('hex');
const NS = `modrule-image-${run}`;
const SCOPE_LABEL = `modrule-image-${run}`;
const OPERATOR_NS = 'kubemod-system';
const IMAGE = `localhost/modrule-e2e:${run}`;
const measured: Record<string, string> = {};

function modRule(name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace: NS }, spec };
}

describeImage('the image, run from its root filesystem against Kubernetes 1.37', () => {
  let work = '';
  let image: UnpackedImage;
  let cp: E2eCluster | null = null;
  let admin: KubeClient;
  let container: Container | null = null;
  let healthUrl = '';

  beforeAll(async () => {
    for (const [tool, args] of [
      ['buildah', ['--version']],
      ['unshare', ['--version']],
    ] as const)
      if (spawnSync(tool, [...args]).status !== 0)
        throw new Error(`MODRULE_E2E_IMAGE=1 needs ${tool} (apt-get install buildah)`);
    if (process.getuid?.() !== 0)
      throw new Error('MODRULE_E2E_IMAGE=1 needs root (buildah, mount namespaces, chroot)');
    work = mkdtempSync(join(tmpdir(), 'modrule-image-e2e-'));
    let started = Date.now();
    // What `make image` does without Docker: compile, then assemble and build with buildah (a private store here).
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
    const archive = join(work, 'image.tar');
    execFileSync(
      'node',
      [
        'dist/image/main.js',
        'build',
        '--builder',
        'buildah',
        '--image',
        IMAGE,
        '--oci-archive',
        archive,
        '--storage-root',
        join(work, 'storage'),
      ],
      { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    measured['image build (tsc + rootfs + buildah)'] = `${Date.now() - started} ms`;
    image = unpackOciArchive(archive, join(work, 'image'));
    measured['image size'] =
      `${(image.layerBytes / 1e6).toFixed(1)} MB compressed (one layer), ${(statSync(archive).size / 1e6).toFixed(1)} MB archive`;
    measured['image root filesystem'] =
      `${execFileSync('du', ['-sh', '--apparent-size', image.rootfs], { encoding: 'utf8' }).split('\t')[0]}`;

    started = Date.now();
    cp = await startCluster();
    admin = createKubeClient(kubeConfigAccess(cp.kubeConfig()));
    const ledger = new ClusterLedger(admin);
    await installBundle(admin, ledger);
    await ledger.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { [SCOPE_LABEL]: 'true' } },
    });
    const webhookPort = await freePort();
    const healthPort = await freePort();
    const { mutating, validating } = webhookManifests(
      `https://${cp.webhookHost}:${webhookPort}`,
      SCOPE_LABEL,
    );
    await ledger.apply(mutating);
    await ledger.apply(validating);

    // The pod's service-account folder, as the kubelet mounts it.
    const sa = join(work, 'serviceaccount');
    execFileSync('mkdir', ['-p', sa]);
    writeFileSync(join(sa, 'token'), await serviceAccountToken(admin, OPERATOR_NS, 'kubemod-operator'));
    writeFileSync(join(sa, 'ca.crt'), cp.caCert() ?? '');
    writeFileSync(join(sa, 'namespace'), OPERATOR_NS);
    const apiPort = new URL(cp.server).port;
    container = runContainer(image.rootfs, image.config, ['operator'], sa, {
      KUBERNETES_SERVICE_HOST: new URL(cp.server).hostname,
      KUBERNETES_SERVICE_PORT: apiPort,
      POD_NAMESPACE: OPERATOR_NS,
      MODRULE_WEBHOOK_PORT: String(webhookPort),
      MODRULE_HEALTH_PORT: String(healthPort),
      MODRULE_CERT_EXTRA_SANS: cp.webhookHost,
    });
    healthUrl = `http://127.0.0.1:${healthPort}`;
    await waitFor(
      'the operator in the image to be ready',
      async () => {
        if (container!.child.exitCode !== null) throw new Error(`it exited:\n${container!.output()}`);
        return (await get(`${healthUrl}/readyz`)).status === 200;
      },
      60_000,
      250,
    );
    measured['operator ready (control plane, bundle, container start)'] = `${Date.now() - started} ms`;
  }, 600_000);

  afterAll(async () => {
    if (container && container.child.exitCode === null) {
      container.child.kill('SIGKILL');
      await container.exited;
    }
    await cp?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
    process.stderr.write(
      `e2e image measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  it('is configured as the bundle runs it: non-root user, modrule as entrypoint, labels', () => {
    const revision = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
      .version;
    expect(image.config).toMatchObject({
      os: 'linux',
      architecture: process.arch === 'x64' ? 'amd64' : 'arm64',
    });
    expect(image.config.config).toMatchObject({
      User: '65532:65532',
      Entrypoint: ['/usr/local/bin/node', '/app/dist/cli/main.js'],
      WorkingDir: '/app',
      ExposedPorts: { '9443/tcp': {}, '8081/tcp': {} },
    });
    expect(image.config.config.Labels).toMatchObject({
      'org.opencontainers.image.source': 'https://github.com/modrule/modrule',
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.revision': expect.stringMatching(new RegExp(`^${revision}(-dirty)?$`)),
    });
  });

  it('runs as 65532 from a root filesystem it cannot write', () => {
    expect(idsOf(container!.pid())).toEqual({ uid: 65532, gid: 65532 });
    // Everything but /tmp belongs to root and is not writable by others.
    const app = statSync(join(image.rootfs, 'app/dist/cli/main.js'));
    expect([app.uid, app.mode & 0o022]).toEqual([0, 0]);
    expect(statSync(join(image.rootfs, 'tmp')).mode & 0o7777).toBe(0o1777);
  });

  it('gets a root filesystem that not even root can write, and a writable /tmp (as readOnlyRootFilesystem)', async () => {
    const probe = runContainer(
      image.rootfs,
      // The image's node as root, in place of modrule: a write outside /tmp must fail on the mount, not on rights.
      {
        ...image.config,
        config: { ...image.config.config, User: '0:0', Entrypoint: [image.config.config.Entrypoint![0]] },
      },
      ['-e', 'const fs = require("fs"); fs.writeFileSync("/tmp/ok", "y"); fs.writeFileSync("/app/x", "y");'],
      join(work, 'serviceaccount'),
      {},
    );
    expect(await probe.exited).not.toBe(0);
    expect(probe.output()).toMatch(/EROFS: read-only file system, open '\/app\/x'/);
  });

  it("runs the image's Node, which has a per-thread CPU clock, with re2 built for it", async () => {
    const probe = runContainer(
      image.rootfs,
      {
        ...image.config,
        config: { ...image.config.config, Entrypoint: [image.config.config.Entrypoint![0]] },
      },
      [
        '-e',
        'const RE2 = require("/app/node_modules/re2"); console.log(JSON.stringify({ node: process.version, ' +
          'abi: process.versions.modules, clock: typeof process.threadCpuUsage, re2: new RE2("^a+$").test("aa") }));',
      ],
      join(work, 'serviceaccount'),
      {},
    );
    expect(await probe.exited).toBe(0);
    expect(JSON.parse(probe.output().trim().split('\n').pop()!)).toEqual({
      node: `v${NODE.version}`,
      abi: NODE.abi,
      clock: 'function',
      re2: true,
    });
    // The operator in it charges rules their thread's CPU time: no warning about a process clock.
    expect(container!.output()).not.toMatch(/per-thread CPU clock/);
  });

  it('loads rules, validates them at admission and patches a dragnet review', async () => {
    // Validated by the image's operator (re2 compiles the regex): an invalid one is refused with its field path.
    const err = await apply(
      admin,
      `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`,
      modRule('broken', {
        type: 'Patch',
        match: [{ select: '$.kind', matchRegex: '(' }],
        patch: [{ op: 'add', path: '/metadata/labels/x', value: '"y"' }],
      }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).message).toContain('spec.match[0].matchRegex');

    await apply(
      admin,
      `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules`,
      modRule('label-configmaps', {
        type: 'Patch',
        match: [{ select: '$.kind', matchRegex: '^Config(Map)?$' }],
        patch: [{ op: 'add', path: '/metadata/labels/from-image', value: '"yes"' }],
      }),
    );
    const ready = await waitFor('Ready=True on label-configmaps', async () => {
      const rule = await admin.request(
        'GET',
        `/apis/api.kubemod.io/v1beta1/namespaces/${NS}/modrules/label-configmaps`,
      );
      const conditions = (((rule.status ?? {}) as JsonObject).conditions ?? []) as JsonObject[];
      return conditions.find((c) => c.type === 'Ready' && c.status === 'True');
    });
    expect(ready).toMatchObject({ reason: 'Valid' });
    const cm = await waitFor('a ConfigMap patched by the dragnet', async () => {
      const made = await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' }, data: { a: 'b' } },
      });
      return ((made.metadata as JsonObject).labels as JsonObject | undefined)?.['from-image'] === 'yes'
        ? made
        : undefined;
    });
    expect((cm.metadata as JsonObject).labels).toEqual({ 'from-image': 'yes' });
  });

  it('serves /healthz and Prometheus metrics on the metrics port', async () => {
    expect((await get(`${healthUrl}/healthz`)).status).toBe(200);
    const metrics = await get(`${healthUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(
      new RegExp(`modrule_rule_patches_total\\{namespace="${NS}",name="label-configmaps"\\} [1-9]`),
    );
    expect(metrics.body).toMatch(
      /modrule_webhook_requests_total\{endpoint="dragnet",operation="CREATE",result="patched"\} [1-9]/,
    );
    expect(metrics.body).toMatch(/modrule_informer_synced\{resource="modrules"\} 1/);
  });

  it('stops on SIGTERM, as PID 1, with exit code 0', async () => {
    process.kill(container!.pid(), 'SIGTERM');
    const code = await Promise.race([
      container!.exited,
      new Promise((r) => setTimeout(() => r('timeout'), 30_000)),
    ]);
    expect({
      code,
      errors: container!
        .output()
        .split('\n')
        .filter((l) => /"level":"error"/.test(l)),
    }).toEqual({
      code: 0,
      errors: [],
    });
  });
});
