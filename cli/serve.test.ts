import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { AddressInfo, connect, createServer } from 'node:net';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { AdmissionReview } from '../webhook/admission';
import { JsonObject } from '../util/json';
import { silentLogger } from '../util/logger';
import { JsonPatchOperation } from '../patch/operation';
import { applyPatch } from '../patch/rfc6902';
import { WEBHOOK_PATHS } from '../webhook/server';
import { decodePatch, postReview, send } from '../webhook/testing';
import { CommandIO, UsageError } from './io';
import { LocalServer, packageRoot, parseServeArgs, run, startLocalServer } from './serve';

const EXAMPLES = join(__dirname, '..', 'examples', 'local');

function captureIO(): CommandIO & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    readStdin: async () => '',
  };
}

describe('parseServeArgs', () => {
  it('serves the bundled examples when no path is given, with the documented defaults', () => {
    const options = parseServeArgs(['--local']);
    expect(options).toEqual({
      paths: [join(packageRoot(), 'examples', 'local')],
      port: 9443,
      healthPort: 8081,
      host: '127.0.0.1',
      clusterNamespace: 'kubemod-system',
      logLevel: 'info',
      cert: undefined,
      key: undefined,
      certDir: undefined,
      allowSecretReferences: false,
      budget: { ms: 100, steps: 1_000_000 },
      recordPatchedBy: false,
    });
    expect(parseServeArgs(['--local', '--record-patched-by'])).toMatchObject({ recordPatchedBy: true });
    expect(parseServeArgs(['--local', '--request-budget-ms', '200'])).toMatchObject({
      budget: { ms: 200, steps: 1_000_000 },
    });
    expect(packageRoot(join(packageRoot(), 'dist', 'cli'))).toBe(packageRoot());
  });

  it.each([
    [[], /only --local is supported/],
    [['--local', '--port', 'abc'], /--port must be a port number/],
    [['--local', '--port', '70000'], /--port must be a port number/],
    [['--local', '--request-budget-ms', 'fast'], /--request-budget-ms must be a positive integer/],
    [['--local', '--cert', 'x.crt'], /--cert and --key go together/],
    [['--local', '--log-level', 'loud'], /--log-level must be one of/],
    [['--local', '--cluster-namespace', 'Not_Valid'], /not a valid namespace name/],
    [['--local', '--bogus'], /unknown option '--bogus'/],
    [['--local', '-'], /cannot read them from standard input \("-"\)/],
  ])('refuses %j', (args, reason) => {
    expect(() => parseServeArgs(args)).toThrow(UsageError);
    expect(() => parseServeArgs(args)).toThrow(reason);
  });

  it('prints help', async () => {
    const io = captureIO();
    expect(await run(['--help'], io)).toBe(0);
    expect(io.out.join('')).toMatch(/usage: modrule serve --local/);
  });
});

describe('serve --local', () => {
  let dir: string;
  let server: LocalServer | null = null;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'modrule-serve-test-'));
    await cp(EXAMPLES, join(dir, 'local'), { recursive: true });
  });
  afterEach(async () => {
    await server?.close();
    server = null;
    await rm(dir, { recursive: true, force: true });
  });

  async function review(name: string): Promise<AdmissionReview & { request: { object: JsonObject } }> {
    return JSON.parse(await readFile(join(EXAMPLES, 'reviews', name), 'utf8')) as AdmissionReview & {
      request: { object: JsonObject };
    };
  }

  async function until(check: () => Promise<boolean>, everyMs = 50): Promise<void> {
    for (let i = 0; i < 5000 / everyMs; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    throw new Error('condition not reached in 5 s');
  }

  it('serves the examples over HTTPS, reloads rule edits, and keeps the old rules when a file goes bad', async () => {
    const io = captureIO();
    const certDir = join(dir, 'certs');
    server = await startLocalServer(
      ['--local', join(dir, 'local'), '--port', '0', '--health-port', '0', '--cert-dir', certDir],
      io,
      { logger: silentLogger(), pollMs: 50, debounceMs: 20 },
    );
    if (!server) throw new Error('no server');
    const s = server;
    const ca = await readFile(join(certDir, 'ca.crt'), 'utf8');
    expect(s.caFile).toBe(join(certDir, 'ca.crt'));
    const banner = io.out.join('');
    expect(banner).toContain(`modrule webhook listening on ${s.webhook.url}`);
    expect(banner).toContain(`curl --cacert ${s.caFile}`);
    expect(banner).toContain(`url: ${s.webhook.url}${WEBHOOK_PATHS.dragnet}`);
    expect(banner).toContain(`caBundle: ${Buffer.from(ca).toString('base64')}`);
    expect(s.firstLoad).toMatchObject({ rules: 5, namespaces: 4, nodes: 1, errors: [] });
    expect((await send(`${s.webhook.healthUrl}/readyz`)).status).toBe(200);

    // The README's curl: the sample Deployment CREATE gets patched.
    const create = await review('deployment-create.json');
    const labelsAfter = async (): Promise<JsonObject> => {
      const answer = await postReview(s.webhook.url, WEBHOOK_PATHS.dragnet, create, ca);
      const result = applyPatch(
        create.request.object,
        decodePatch(answer.review) as JsonPatchOperation[],
      ) as JsonObject;
      return (result.metadata as JsonObject).labels as JsonObject;
    };
    expect(await labelsAfter()).toEqual({ app: 'nginx', team: 'platform' });

    const rejected = await postReview(
      s.webhook.url,
      WEBHOOK_PATHS.dragnet,
      await review('service-create-external-ips.json'),
      ca,
    );
    expect(rejected.review.response?.allowed).toBe(false);
    expect(rejected.review.response?.status?.message).toContain('default/reject-external-ips');

    // Edit a rule: the change takes effect without a restart.
    const ruleFile = join(dir, 'local', 'rules', 'default', 'add-team-label.yaml');
    const original = await readFile(ruleFile, 'utf8');
    await writeFile(ruleFile, original.replace(/value: platform/g, 'value: web'));
    await until(async () => (await labelsAfter()).team === 'web');

    // A broken file and an invalid rule: reported, and the rules in force stay as they were.
    await writeFile(ruleFile, 'apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: [broken');
    await writeFile(
      join(dir, 'local', 'rules', 'default', 'reject-external-ips.yaml'),
      (await readFile(join(EXAMPLES, 'rules', 'default', 'reject-external-ips.yaml'), 'utf8')).replace(
        "matchRegex: '123\\.45\\.67\\.*'",
        "matchRegex: '(unclosed'",
      ),
    );
    const reports: string[][] = [];
    s.source.onReload((r) => reports.push(r.errors));
    await until(async () => reports.some((e) => e.length >= 2));
    expect(await labelsAfter()).toEqual({ app: 'nginx', team: 'web' });
    const stillRejected = await postReview(
      s.webhook.url,
      WEBHOOK_PATHS.dragnet,
      await review('service-create-external-ips.json'),
      ca,
    );
    expect(stillRejected.review.response?.allowed).toBe(false);

    await s.close();
    server = null;
    await expect(send(`${s.webhook.url}${WEBHOOK_PATHS.dragnet}`, { body: '{}', ca })).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });

  it('with --record-patched-by, a patched object carries the rules that patched it', async () => {
    server = await startLocalServer(
      [
        '--local',
        join(dir, 'local'),
        '--port',
        '0',
        '--health-port',
        '0',
        '--cert-dir',
        join(dir, 'c'),
        '--record-patched-by',
      ],
      captureIO(),
      { logger: silentLogger() },
    );
    if (!server) throw new Error('no server');
    const create = await review('deployment-create.json');
    const answer = await postReview(
      server.webhook.url,
      WEBHOOK_PATHS.dragnet,
      create,
      await readFile(server.caFile, 'utf8'),
    );
    const result = applyPatch(
      create.request.object,
      decodePatch(answer.review) as JsonPatchOperation[],
    ) as JsonObject;
    expect((result.metadata as JsonObject).annotations).toMatchObject({
      'modrule.io/patched-by': 'default/add-team-label,default/harden-containers',
    });
  });

  it('answers every sample review in examples/local/reviews as the docs say', async () => {
    server = await startLocalServer(
      ['--local', join(dir, 'local'), '--port', '0', '--health-port', '0', '--cert-dir', join(dir, 'c')],
      captureIO(),
      {
        logger: silentLogger(),
      },
    );
    if (!server) throw new Error('no server');
    const ca = await readFile(server.caFile, 'utf8');
    const expectations: Array<[string, string, (r: AdmissionReview) => void]> = [
      [
        'deployment-create.json',
        WEBHOOK_PATHS.dragnet,
        (r) => expect(r.response?.patchType).toBe('JSONPatch'),
      ],
      ['deployment-update.json', WEBHOOK_PATHS.dragnet, (r) => expect(r.response?.patch).toBeUndefined()],
      [
        'deployment-delete.json',
        WEBHOOK_PATHS.dragnet,
        (r) => expect(r.response).toMatchObject({ allowed: true }),
      ],
      [
        'service-create-external-ips.json',
        WEBHOOK_PATHS.dragnet,
        (r) => expect(r.response?.allowed).toBe(false),
      ],
      [
        'service-create-allowed-ips.json',
        WEBHOOK_PATHS.dragnet,
        (r) => expect(r.response?.allowed).toBe(true),
      ],
      [
        'pod-create.json',
        WEBHOOK_PATHS.dragnet,
        (r) => expect(r.response?.auditAnnotations).toEqual({ applied: 'kubemod-system/add-flavor' }),
      ],
      [
        'namespace-create-v1beta1.json',
        WEBHOOK_PATHS.dragnet,
        (r) => {
          expect(r.apiVersion).toBe('admission.k8s.io/v1beta1');
          expect(r.response?.auditAnnotations).toEqual({ applied: 'kubemod-system/label-new-namespaces' });
        },
      ],
      [
        'modrule-create-valid.json',
        WEBHOOK_PATHS.validateModRule,
        (r) => expect(r.response?.allowed).toBe(true),
      ],
      [
        'modrule-create-invalid.json',
        WEBHOOK_PATHS.validateModRule,
        (r) => expect(r.response?.status?.code).toBe(422),
      ],
      [
        'modrule-create-valid.json',
        WEBHOOK_PATHS.mutateModRule,
        (r) => expect(r.response?.patchType).toBe('JSONPatch'),
      ],
      ['pod-binding.json', WEBHOOK_PATHS.podBinding, (r) => expect(r.response?.allowed).toBe(true)],
    ];
    for (const [file, path, check] of expectations) {
      const sent = await review(file);
      const answer = await postReview(server.webhook.url, path, sent, ca);
      expect(answer.review.response?.uid).toBe(sent.request?.uid);
      check(answer.review);
    }
  });

  it('serves rules that read owners and referenced objects from the files, and follows their edits', async () => {
    const refs = join(dir, 'refs');
    const from = join(__dirname, '..', 'examples', 'references');
    await cp(join(from, 'rules.yaml'), join(refs, 'rules.yaml'));
    await cp(join(from, 'cluster.yaml'), join(refs, 'cluster.yaml'));
    server = await startLocalServer(
      ['--local', refs, '--port', '0', '--health-port', '0', '--cert-dir', join(dir, 'c')],
      captureIO(),
      { logger: silentLogger(), pollMs: 50, debounceMs: 20 },
    );
    if (!server) throw new Error('no server');
    const s = server;
    expect(s.firstLoad).toMatchObject({ rules: 4, namespaces: 1, objects: 5, errors: [] });
    const ca = await readFile(s.caFile, 'utf8');
    const [pod] = parseAllDocuments(await readFile(join(from, 'input.yaml'), 'utf8')).map(
      (d) => d.toJS() as JsonObject,
    );
    const sent: AdmissionReview & { request: { object: JsonObject } } = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'c0ffee00-0000-4000-8000-000000000001',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        namespace: 'shop',
        operation: 'CREATE',
        userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
        object: pod,
      },
    } as AdmissionReview & { request: { object: JsonObject } };
    const admitted = async (): Promise<JsonObject> => {
      const answer = await postReview(s.webhook.url, WEBHOOK_PATHS.dragnet, sent, ca);
      return applyPatch(pod, decodePatch(answer.review) as JsonPatchOperation[]) as JsonObject;
    };
    const first = await admitted();
    expect((first.metadata as JsonObject).labels).toMatchObject({ team: 'payments' });
    expect(((first.spec as JsonObject).containers as JsonObject[])[0].image).toBe(
      'mirror.example.com/library/nginx:1.27',
    );
    const cluster = join(refs, 'cluster.yaml');
    await writeFile(
      cluster,
      (await readFile(cluster, 'utf8')).replace('mirror.example.com', 'mirror.internal'),
    );
    await until(async () =>
      String(((await admitted()).spec as { containers: JsonObject[] }).containers[0].image).startsWith(
        'mirror.internal/',
      ),
    );
  });

  it('holds dragnet requests that arrive during the first load until the rules are in', async () => {
    // Enough extra rules (other namespaces) that the first load takes a while.
    const extra = Array.from(
      { length: 3000 },
      (_, i) =>
        `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: r${i}\n  namespace: team-${i % 50}\n` +
        `spec:\n  type: Patch\n  match:\n    - select: '$.kind'\n      matchValue: Deployment\n` +
        `  patch:\n    - op: add\n      path: /metadata/labels/r${i}\n      value: x\n`,
    );
    await writeFile(join(dir, 'local', 'rules', 'extra.yaml'), extra.join('---\n'));
    const port = await freePort();
    const certDir = join(dir, 'c');
    const starting = startLocalServer(
      ['--local', join(dir, 'local'), '--port', String(port), '--health-port', '0', '--cert-dir', certDir],
      captureIO(),
      { logger: silentLogger() },
    );
    let loadDone = false;
    void starting.then(() => (loadDone = true));
    await until(() => canConnect(port), 10);
    const arrivedDuringLoad = !loadDone;
    const create = await review('deployment-create.json');
    const answer = await postReview(
      `https://127.0.0.1:${port}`,
      WEBHOOK_PATHS.dragnet,
      create,
      await readFile(join(certDir, 'ca.crt'), 'utf8'),
    );
    server = await starting;
    // Never an answer from the empty store: the sample Deployment gets its patch.
    expect(answer.review.response?.patchType).toBe('JSONPatch');
    expect(server?.firstLoad.rules).toBe(3005);
    // The case this test is about did happen (the port opens before a load of 3,000 rules is done).
    expect(arrivedDuringLoad).toBe(true);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
