// Stand-ins for webhooks in the e2e suite: one that never answers, one that counts what the API server sends it.
import { createServer as createHttpsServer, Server } from 'node:https';
import { connect, createServer as createTcpServer, Server as TcpServer, Socket } from 'node:net';
import { issueServingCert, newCa } from '../../webhook/certs';
import { freePort } from './controlplane';

/** A TCP listener that accepts connections and never answers: a hung webhook pod. */
export function blackHole(port: number, host = '127.0.0.1'): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () =>
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}

/** An HTTPS webhook that allows everything and records which namespace/resource/name it was called for. */
/** `host`: where the API server reaches it (it listens there, or on every interface when it is not loopback). */
export async function probeWebhook(host = '127.0.0.1'): Promise<{
  url: string;
  ca: string;
  expect(key: string, sent: boolean): void;
  mismatches(): string[];
  calls(): number;
  close(): Promise<void>;
}> {
  const now = new Date();
  const ca = newCa(now, 1, 'modrule-e2e-probe-ca');
  const cert = issueServingCert(ca, [host], now, 1);
  const seen = new Map<string, number>();
  const server: Server = createHttpsServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const review = JSON.parse(body) as {
        request: { uid: string; namespace: string; name?: string; resource: { resource: string } };
      };
      const { namespace, resource, name } = review.request;
      const key = `${namespace}/${resource.resource}/${name ?? ''}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true },
        }),
      );
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, host === '127.0.0.1' ? host : '0.0.0.0', () => r()));
  const expected = new Map<string, boolean>();
  return {
    url: `https://${host}:${port}/probe`,
    ca: ca.cert,
    expect: (key, sent) => void expected.set(key, sent),
    mismatches: () =>
      [...expected]
        .filter(([k, sent]) => (seen.get(k) ?? 0) !== (sent ? 1 : 0))
        .map(([k, sent]) => `${k}: expected ${sent ? 1 : 0}, got ${seen.get(k) ?? 0}`),
    calls: () => [...seen.values()].reduce((a, b) => a + b, 0),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A TCP proxy on `port` that hands each connection to the next of `backends` (a Service in front of replicas). */
export function roundRobin(
  port: number,
  host: string,
  backends: readonly number[],
): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let next = 0;
  const server: TcpServer = createTcpServer((client) => {
    const upstream = connect(backends[next++ % backends.length], '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () =>
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}
