import { ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:https';
import { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonObject } from '../util/json';
import { stringifyManifests } from '../util/yaml';
import { generateCertificates } from '../webhook/certs';
import { metadataOf } from '../util/meta';
import type { ChildMemory } from './server-child';
import { workloadNamespaces } from './workloads';

// What the benches that measure over HTTPS start: server children (bench/server-child.ts), the rule files they
// serve, and a list/watch server for the operator child.

/** A server child: where it listens, its memory on request, and how to stop it. */
export interface Child {
  url: string;
  memory(): Promise<ChildMemory>;
  stop(): Promise<void>;
}

/** Forks bench/server-child in MODE (with more environment variables) and waits for its URL. */
export function startChild(
  mode: string,
  arg = '',
  execArgv: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<Child> {
  const child: ChildProcess = fork(join(__dirname, 'server-child.js'), [mode, arg], {
    env: { ...process.env, ...env },
    execArgv: ['--expose-gc', ...execArgv],
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    child.once('message', (m: { url?: string; error?: string }) => {
      if (!m.url) return reject(new Error(`${mode} server failed: ${m.error}`));
      resolve({
        url: m.url,
        memory: () =>
          new Promise((done) => {
            child.once('message', (r: { memory: ChildMemory }) => done(r.memory));
            child.send('memory');
          }),
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.send('stop');
          }),
      });
    });
  });
}

/** Writes rules and namespaces as YAML files, one per namespace, as a GitOps repository would hold them. */
export function writeRuleFiles(rules: readonly JsonObject[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'modrule-bench-'));
  const byNamespace = new Map<string, JsonObject[]>();
  for (const r of rules) {
    const ns = String(metadataOf(r).namespace);
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), r]);
  }
  for (const [ns, list] of byNamespace) writeFileSync(join(dir, `${ns}.yaml`), stringifyManifests(list));
  writeFileSync(join(dir, 'namespaces.yaml'), stringifyManifests(workloadNamespaces()));
  return dir;
}

/** The list/watch server, and a pod's view of it: service env variables and a service-account folder. */
export interface ListWatchServer {
  url: string;
  /** KUBERNETES_SERVICE_HOST/PORT as a pod sees them. */
  serviceEnv: Record<string, string>;
  /** token and ca.crt, as mounted in a pod. */
  serviceAccountDir: string;
  close(): void;
}

/**
 * Just enough of an API server for the operator's informers: one-page lists, watches that stay open. HTTPS with its
 * own CA and a bearer token checked, so the operator child runs on the in-cluster credentials a pod uses.
 */
export function startListWatchServer(rules: readonly JsonObject[]): Promise<ListWatchServer> {
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  const token = 'bench-service-account-token';
  const serviceAccountDir = mkdtempSync(join(tmpdir(), 'modrule-bench-sa-'));
  writeFileSync(join(serviceAccountDir, 'token'), token);
  writeFileSync(join(serviceAccountDir, 'ca.crt'), certs.caCert);
  const withVersion = (list: readonly JsonObject[]) =>
    list.map((o, i) => ({
      ...o,
      metadata: { ...metadataOf(o), uid: `uid-${i}`, resourceVersion: '1' },
    }));
  const collections = new Map<string, string>([
    [
      '/apis/api.kubemod.io/v1beta1/modrules',
      JSON.stringify({ items: withVersion(rules), metadata: { resourceVersion: '1' } }),
    ],
    [
      '/api/v1/namespaces',
      JSON.stringify({ items: withVersion(workloadNamespaces()), metadata: { resourceVersion: '1' } }),
    ],
    ['/api/v1/nodes', JSON.stringify({ items: [], metadata: { resourceVersion: '1' } })],
  ]);
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const body = collections.get(url.pathname);
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end();
    } else if (!body) {
      res.writeHead(404).end();
    } else if (url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json' }); // stays open, no events
    } else {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
    }
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const port = String((server.address() as AddressInfo).port);
      resolve({
        url: `https://127.0.0.1:${port}`,
        serviceEnv: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        serviceAccountDir,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
          rmSync(serviceAccountDir, { recursive: true, force: true });
        },
      });
    }),
  );
}
