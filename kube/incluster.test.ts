import type https from 'node:https';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newBundle } from '../operator/certs/certificates';
import { InClusterAccess, inClusterServer } from './incluster';
import { createKubeClient, isTransient, KubeApiError } from './kube';
import { FakeApiServer } from '../operator/testing/fake-apiserver';

/** A folder laid out as a pod's service-account mount. */
function serviceAccountDir(files: { token?: string; ca?: string }): string {
  const dir = mkdtempSync(join(tmpdir(), 'modrule-sa-'));
  if (files.token !== undefined) writeFileSync(join(dir, 'token'), files.token);
  if (files.ca !== undefined) writeFileSync(join(dir, 'ca.crt'), files.ca);
  return dir;
}

async function applied(access: InClusterAccess): Promise<https.RequestOptions> {
  const opts: https.RequestOptions = { headers: { Accept: 'application/json' } };
  await access.apply(opts);
  return opts;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempSa(files: { token?: string; ca?: string }): string {
  const dir = serviceAccountDir(files);
  dirs.push(dir);
  return dir;
}

describe('inClusterServer', () => {
  it('builds the URL from KUBERNETES_SERVICE_HOST/PORT as client-node does', () => {
    const url = (host: string, port: string) =>
      inClusterServer({ KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port });
    expect(url('10.96.0.1', '443')).toBe('https://10.96.0.1:443');
    expect(url('fd00:10:96::1', '443')).toBe('https://[fd00:10:96::1]:443');
    expect(url('kubernetes.default.svc', '6443')).toBe('https://kubernetes.default.svc:6443');
    expect(url('10.96.0.1', '8080')).toBe('http://10.96.0.1:8080');
    expect(url('10.96.0.1', '80')).toBe('http://10.96.0.1:80');
    expect(url('10.96.0.1', '8001')).toBe('http://10.96.0.1:8001');
  });

  it('says which variables are missing', () => {
    expect(() => inClusterServer({ KUBERNETES_SERVICE_HOST: '10.96.0.1' })).toThrow(
      /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set/,
    );
  });
});

describe('InClusterAccess', () => {
  const ca = newBundle(['127.0.0.1'], new Date()).caCert;

  it('sends the token as a bearer token (trimmed, as client-go does) and trusts the service-account CA', async () => {
    const access = new InClusterAccess('https://10.96.0.1:443', { dir: tempSa({ token: 'tok-1\n', ca }) });
    const opts = await applied(access);
    expect(opts.headers).toEqual({ Accept: 'application/json', Authorization: 'Bearer tok-1' });
    expect(opts.ca).toBe(ca);
    expect(access.server).toBe('https://10.96.0.1:443');
  });

  it('fails at construction with the path when the token or the CA is missing, or the token is empty', () => {
    const noToken = tempSa({ ca });
    expect(() => new InClusterAccess('https://x:443', { dir: noToken })).toThrow(
      `in-cluster: cannot read the service-account token ${join(noToken, 'token')}: ENOENT`,
    );
    const noCa = tempSa({ token: 'tok' });
    expect(() => new InClusterAccess('https://x:443', { dir: noCa })).toThrow(
      `in-cluster: cannot read the service-account CA ${join(noCa, 'ca.crt')}: ENOENT`,
    );
    const empty = tempSa({ token: ' \n', ca });
    expect(() => new InClusterAccess('https://x:443', { dir: empty })).toThrow(
      `in-cluster: the service-account token ${join(empty, 'token')} is empty`,
    );
  });

  it('picks up a rotated token and CA once the last read is a minute old, not before', async () => {
    let now = 1_000_000;
    const dir = tempSa({ token: 'tok-1', ca });
    const access = new InClusterAccess('https://x:443', { dir, now: () => now });
    expect((await applied(access)).headers).toMatchObject({ Authorization: 'Bearer tok-1' });
    const ca2 = newBundle(['127.0.0.1'], new Date()).caCert;
    writeFileSync(join(dir, 'token'), 'tok-2');
    writeFileSync(join(dir, 'ca.crt'), ca2);
    now += 59_000;
    expect((await applied(access)).headers).toMatchObject({ Authorization: 'Bearer tok-1' });
    now += 1_000;
    const opts = await applied(access);
    expect(opts.headers).toMatchObject({ Authorization: 'Bearer tok-2' });
    expect(opts.ca).toBe(ca2);
  });

  it('keeps the last good token when a re-read fails, and reads again a period later', async () => {
    let now = 0;
    const dir = tempSa({ token: 'tok-1', ca });
    const access = new InClusterAccess('https://x:443', { dir, now: () => now, refreshMs: 1000 });
    unlinkSync(join(dir, 'token'));
    now = 1000;
    expect((await applied(access)).headers).toMatchObject({ Authorization: 'Bearer tok-1' });
    writeFileSync(join(dir, 'token'), 'tok-3');
    now = 1500;
    expect((await applied(access)).headers).toMatchObject({ Authorization: 'Bearer tok-1' });
    now = 2000;
    expect((await applied(access)).headers).toMatchObject({ Authorization: 'Bearer tok-3' });
  });

  it('reads from KUBERNETES_SERVICE_HOST/PORT and the given folder', () => {
    const access = InClusterAccess.fromEnv(
      { KUBERNETES_SERVICE_HOST: '::1', KUBERNETES_SERVICE_PORT: '6443' },
      { dir: tempSa({ token: 't', ca }) },
    );
    expect(access.server).toBe('https://[::1]:6443');
  });
});

describe('a KubeClient on in-cluster credentials against an HTTPS API server', () => {
  const bundle = newBundle(['127.0.0.1'], new Date());
  let api: FakeApiServer;
  let now = 0;
  let dir: string;
  let access: InClusterAccess;

  beforeEach(async () => {
    api = await FakeApiServer.start({ tls: { cert: bundle.cert, key: bundle.key }, token: 'sa-token-1' });
    api.put('namespaces', { metadata: { name: 'default' } });
    dir = tempSa({ token: 'sa-token-1', ca: bundle.caCert });
    const port = new URL(api.url).port;
    access = InClusterAccess.fromEnv(
      { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
      { dir, now: () => now },
    );
  });
  afterEach(() => api.close());

  it('lists and watches over HTTPS with the service-account CA and token', async () => {
    expect(access.server).toBe(api.url);
    const client = createKubeClient(access);
    const list = await client.request('GET', '/api/v1/namespaces');
    expect(list).toMatchObject({ kind: 'NamespaceList', items: [{ metadata: { name: 'default' } }] });
    const events: string[] = [];
    const watch = client.watch(
      '/api/v1/namespaces',
      { resourceVersion: String((list.metadata as { resourceVersion: string }).resourceVersion) },
      (e) => events.push(`${e.type} ${String((e.object.metadata as { name: string }).name)}`),
    );
    api.put('namespaces', { metadata: { name: 'team-a' } });
    const deadline = Date.now() + 5000;
    while (events.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    watch.abort();
    await watch.done;
    expect(events).toEqual(['ADDED team-a']);
  });

  it('is refused (401) with a token the server does not accept, until the rotated one is read', async () => {
    const client = createKubeClient(access);
    api.token = 'sa-token-2'; // the server moved on; the file is rewritten soon after
    writeFileSync(join(dir, 'token'), 'sa-token-2');
    const err = await client.request('GET', '/api/v1/namespaces').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ status: 401, reason: 'Unauthorized' });
    now += 60_000;
    await expect(client.request('GET', '/api/v1/namespaces')).resolves.toMatchObject({
      kind: 'NamespaceList',
    });
  });

  it('does not talk to a server whose certificate the service-account CA did not sign', async () => {
    writeFileSync(join(dir, 'ca.crt'), newBundle(['127.0.0.1'], new Date()).caCert);
    const other = InClusterAccess.fromEnv(
      { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: new URL(api.url).port },
      { dir },
    );
    const before = api.requests.length;
    const err = await createKubeClient(other)
      .request('GET', '/api/v1/namespaces')
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 0, reason: 'ConnectionError' });
    expect(isTransient(err)).toBe(true);
    expect(api.requests.length).toBe(before);
  });
});
