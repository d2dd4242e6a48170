import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';

// `kubectl apply --dry-run=client` needs an API server for discovery and to look up each object, even though it
// writes nothing. With no cluster here, a stub answers exactly that from the bundle's own kinds: discovery, and 404
// for every object (a fresh install: the bundle holds no object that exists before it, such as kube-system).

const ROOT = join(__dirname, '..');
const docs = parseAllDocuments(readFileSync(join(ROOT, 'bundle.yaml'), 'utf8')).map(
  (d) => d.toJS() as JsonObject,
);
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

interface Resource {
  groupVersion: string;
  name: string;
  kind: string;
  namespaced: boolean;
}

function resources(): Resource[] {
  const seen = new Map<string, Resource>();
  for (const d of docs) {
    const meta = d.metadata as JsonObject;
    const r = {
      groupVersion: d.apiVersion as string,
      name: `${(d.kind as string).toLowerCase()}s`,
      kind: d.kind as string,
      namespaced: typeof meta.namespace === 'string',
    };
    seen.set(`${r.groupVersion}/${r.kind}`, r);
  }
  return [...seen.values()];
}

function startStub(): Promise<{ server: Server; url: string; writes: string[] }> {
  const all = resources();
  const writes: string[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET') {
      writes.push(`${req.method} ${path}`); // a client dry run must never write
      return send(405, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 405 });
    }
    const list = (gv: string) => ({
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: gv,
      resources: all
        .filter((r) => r.groupVersion === gv)
        .map((r) => ({
          name: r.name,
          singularName: '',
          namespaced: r.namespaced,
          kind: r.kind,
          verbs: ['get', 'list', 'create', 'patch'],
        })),
    });
    if (path === '/version') return send(200, { major: '1', minor: '31', gitVersion: 'v1.31.0' });
    if (path === '/api')
      return send(200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (path === '/api/v1') return send(200, list('v1'));
    if (path === '/apis') {
      const gvs = [...new Set(all.map((r) => r.groupVersion).filter((gv) => gv.includes('/')))];
      return send(200, {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: gvs.map((gv) => {
          const [name, version] = gv.split('/');
          return {
            name,
            versions: [{ groupVersion: gv, version }],
            preferredVersion: { groupVersion: gv, version },
          };
        }),
      });
    }
    const groupVersion = /^\/apis\/([^/]+\/[^/]+)$/.exec(path);
    if (groupVersion) return send(200, list(groupVersion[1]));
    send(404, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: 'not found',
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, writes }),
    ),
  );
}

function kubectl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('kubectl', args, { cwd: ROOT, env: { ...process.env, KUBECONFIG: '/dev/null' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

(hasKubectl ? describe : describe.skip)(
  'kubectl apply --dry-run=client -f bundle.yaml (kubectl on PATH)',
  () => {
    let stub: Awaited<ReturnType<typeof startStub>>;
    beforeAll(async () => {
      stub = await startStub();
    });
    afterAll(() => new Promise<void>((resolve) => stub.server.close(() => resolve())));

    it('creates every object, with no warning', async () => {
      // --validate=false: schema validation would need the API server's OpenAPI documents, which a stub cannot serve
      // faithfully; the CRD schema itself is validated in crd.test.ts.
      const r = await kubectl([
        'apply',
        '--dry-run=client',
        '--validate=false',
        `--server=${stub.url}`,
        '-f',
        'bundle.yaml',
      ]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(docs.length);
      expect(lines.filter((l) => l.endsWith(' created (dry run)'))).toHaveLength(docs.length);
      expect(lines).toContain(
        'mutatingwebhookconfiguration.admissionregistration.k8s.io/kubemod-mutating-webhook-configuration created (dry run)',
      );
      expect(stub.writes).toEqual([]);
    });
  },
);
