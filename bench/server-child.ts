import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { getHeapSpaceStatistics } from 'node:v8';
import { createLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { startLocalServer } from '../cli/serve';
import { generateCertificates } from '../webhook/certs';
import { startWebhookServer, WEBHOOK_PATHS } from '../webhook/server';
import { MemoryTlsSource, TLS_MIN_VERSION } from '../webhook/tls';

/**
 * A webhook server in its own process, so its RSS is its own: `floor`, `local DIR` (serve --local with files) or
 * `operator DIR` (the operator's informers and store, fed by a list/watch server reached as a pod reaches its API
 * server: KUBERNETES_SERVICE_HOST/PORT, token and ca.crt in DIR). Forked with an IPC channel by
 * bench/dragnet.bench.ts: sends {url} when it serves, answers 'memory' with its memory, exits on 'stop'.
 */

/** Memory of this process; heap after a full GC (needs --expose-gc). */
export interface ChildMemory {
  rss: number;
  heapUsed: number;
  /** Where the RSS goes, for diagnosis: V8 heap committed (total and per space), external memory. */
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, number>;
}

/** The floor: an HTTPS server that only reads and parses the body and answers allowed. */
export function startFloor(cert: string, key: string): Promise<Server> {
  const server = createServer({ cert, key, minVersion: TLS_MIN_VERSION }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        apiVersion: string;
        request: { uid: string };
      };
      const body = JSON.stringify({
        apiVersion: review.apiVersion,
        kind: 'AdmissionReview',
        response: { uid: review.request.uid, allowed: true },
      });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function serve(mode: string, arg: string): Promise<string> {
  const quiet = { stdout: () => undefined, stderr: () => undefined, readStdin: () => Promise.resolve('') };
  if (mode === 'floor') {
    const certs = generateCertificates({ hosts: ['127.0.0.1'] });
    const floor = await startFloor(certs.cert, certs.key);
    return `https://127.0.0.1:${(floor.address() as AddressInfo).port}${WEBHOOK_PATHS.dragnet}`;
  }
  if (mode === 'local') {
    // Logs at info go to stderr, which the bench discards: the cost of writing them stays in.
    const server = await startLocalServer(['--local', arg, '--port', '0', '--health-port', '0'], quiet);
    if (!server) throw new Error('serve --local did not start');
    if (server.firstLoad.errors.length > 0) throw new Error(server.firstLoad.errors[0]);
    return server.webhook.url + WEBHOOK_PATHS.dragnet;
  }
  if (mode === 'operator') {
    // Loaded only here, not serve --local's to carry. The production path: the pod's credentials (no kubeconfig, so
    // @kubernetes/client-node is never loaded), chosen by the operator's own loadClusterAccess.
    const { loadClusterAccess } = await import('../kube/credentials');
    const { createKubeClient } = await import('../kube/kube');
    const { ClusterSync } = await import('../operator/rules/sync');
    const podEnv = {
      KUBERNETES_SERVICE_HOST: process.env.KUBERNETES_SERVICE_HOST,
      KUBERNETES_SERVICE_PORT: process.env.KUBERNETES_SERVICE_PORT,
    };
    const logger = createLogger('info');
    const store = new RuleStore({ keepSource: false }); // as operator/start.ts
    const sync = new ClusterSync({
      client: createKubeClient(await loadClusterAccess(podEnv, { dir: arg })),
      store,
      logger,
      status: null,
    });
    sync.start();
    await sync.synced;
    const certs = generateCertificates({ hosts: ['127.0.0.1'] });
    const webhook = await startWebhookServer(
      {
        tls: new MemoryTlsSource({ cert: certs.cert, key: certs.key }),
        port: 0,
        host: '127.0.0.1',
        healthPort: 0,
        logger,
        isReady: () => sync.isReady(),
      },
      { store },
    );
    return webhook.url + WEBHOOK_PATHS.dragnet;
  }
  throw new Error(`unknown mode ${mode}`);
}

function memory(): ChildMemory {
  const before = process.memoryUsage();
  const spaces: Record<string, number> = {};
  for (const s of getHeapSpaceStatistics()) spaces[s.space_name] = s.physical_space_size;
  (globalThis as { gc?: () => void }).gc?.();
  const after = process.memoryUsage();
  return {
    rss: before.rss,
    heapUsed: after.heapUsed,
    heapTotal: before.heapTotal,
    external: before.external,
    arrayBuffers: before.arrayBuffers,
    spaces,
  };
}

if (require.main === module && process.send) {
  const [mode, arg] = process.argv.slice(2);
  serve(mode, arg).then(
    (url) => {
      process.on('message', (m) => {
        if (m === 'memory') process.send?.({ memory: memory() });
        else process.exit(0);
      });
      process.send?.({ url });
    },
    (err: Error) => {
      process.send?.({ error: err.message });
      process.exit(1);
    },
  );
}
