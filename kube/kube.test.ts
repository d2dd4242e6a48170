import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { ClusterAccess } from './access';
import { newBundle } from '../operator/certs/certificates';
import { createKubeClient, isTransient, KubeApiError } from './kube';
import { kubeConfigAccess } from './kubeconfig';

describe('KubeClient over HTTPS with a kubeconfig', () => {
  const bundle = newBundle(['localhost', '127.0.0.1'], new Date());
  let server: Server;
  let port = 0;
  const seen: Array<{ auth: string | undefined; socket: number; path: string }> = [];
  let sockets = 0;

  beforeAll(async () => {
    server = createServer({ cert: bundle.cert, key: bundle.key }, (req, res) => {
      seen.push({
        auth: req.headers.authorization,
        socket: (req.socket as unknown as { id: number }).id,
        path: req.url ?? '',
      });
      if (req.url?.startsWith('/api/v1/namespaces/missing')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            reason: 'NotFound',
            message: 'namespaces "missing" not found',
            code: 404,
          }),
        );
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Namespace', metadata: { name: 'default' } }));
    });
    server.on('secureConnection', (s) => ((s as unknown as { id: number }).id = ++sockets));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  function kubeConfig(ca: string, path = ''): ClusterAccess {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'c', server: `https://127.0.0.1:${port}${path}`, caData: Buffer.from(ca).toString('base64') },
      ],
      users: [{ name: 'u', token: 'secret-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return kubeConfigAccess(kc);
  }

  it('verifies the server against the kubeconfig CA, sends the token, and reuses the connection', async () => {
    const client = createKubeClient(kubeConfig(bundle.caCert));
    seen.length = 0;
    await expect(client.request('GET', '/api/v1/namespaces/default')).resolves.toMatchObject({
      kind: 'Namespace',
    });
    await client.request('GET', '/api/v1/namespaces/default');
    expect(seen.map((s) => s.auth)).toEqual(['Bearer secret-token', 'Bearer secret-token']);
    expect(seen[0].socket).toBe(seen[1].socket);
  });

  it('keeps a path prefix of the server URL (API servers behind a proxy path)', async () => {
    const client = createKubeClient(kubeConfig(bundle.caCert, '/k8s/clusters/c-1'));
    seen.length = 0;
    await client.request('GET', '/api/v1/namespaces/default', { query: { limit: 5, continue: undefined } });
    expect(seen[0].path).toBe('/k8s/clusters/c-1/api/v1/namespaces/default?limit=5');
  });

  it('refuses a server whose certificate the kubeconfig CA did not sign', async () => {
    const other = newBundle(['localhost'], new Date());
    const err = await createKubeClient(kubeConfig(other.caCert))
      .request('GET', '/api/v1/namespaces/default')
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 0 });
    expect(isTransient(err)).toBe(true);
  });

  it('maps a Status body to status, reason and message', async () => {
    const err = await createKubeClient(kubeConfig(bundle.caCert))
      .request('GET', '/api/v1/namespaces/missing')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({
      status: 404,
      reason: 'NotFound',
      message: '404 NotFound: namespaces "missing" not found',
    });
    expect(isTransient(err)).toBe(false);
  });
});

describe('isTransient', () => {
  it.each([
    [new KubeApiError('x', 0, 'ConnectionError'), true],
    [new KubeApiError('x', 429, 'TooManyRequests'), true],
    [new KubeApiError('x', 503, 'ServiceUnavailable'), true],
    [new KubeApiError('x', 409, 'Conflict'), false],
    [new KubeApiError('x', 403, 'Forbidden'), false],
    [new Error('socket'), true],
  ])('%s -> %s', (err, expected) => {
    expect(isTransient(err)).toBe(expected);
  });
});
