import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { RuleStore } from '../../store/rules';
import { generateCertificates } from '../../webhook/certs';
import { PeerKeys } from '../../webhook/peer';
import { RunningWebhook } from '../../webhook/server';
import { AdmittedRules } from '../rules/admitted';
import { createKubeClient } from '../../kube/kube';
import { PeerNotifier, PeerNotifierOptions } from './peers';
import { FakeApiServer } from '../testing/fake-apiserver';
import { eventually } from '../testing/eventually';
import { startTestServer } from '../../webhook/testing';

const certs = generateCertificates({ hosts: ['127.0.0.1'] });
const version = { namespace: 'team-a', name: 'r', uid: 'u-1', generation: 3 };

/** The webhook Service's EndpointSlice as the endpoint controller writes it: one per set of ports. */
function slice(name: string, port: number, address = '127.0.0.1', conditions: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: 'kubemod-system',
      labels: { 'kubernetes.io/service-name': 'kubemod-webhook-service' },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true, serving: true, ...conditions } }],
    // The metrics port first: the webhook's is found by its name, not its place.
    ports: [
      { name: 'metrics', port: 8081, protocol: 'TCP' },
      { name: 'webhook', port, protocol: 'TCP' },
    ],
  };
}

/** An HTTPS server that answers `status` to the first `failures` requests, then 204; counts them. */
async function flakyPeer(
  failures: number,
  status = 503,
): Promise<{ server: Server; url: string; seen: () => number }> {
  let seen = 0;
  const server = createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
    req.resume();
    res.statusCode = ++seen > failures ? 204 : status;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, seen: () => seen };
}

async function notices(registry: Registry): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric('modrule_peer_notices_total')!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.result), v.value]));
}

describe('replicas tell each other of the rules they admit', () => {
  let api: FakeApiServer;
  let peer: RunningWebhook;
  let held: AdmittedRules;
  /** The secret the peer derives its keys from (tests rotate it), and what re-reading it does. */
  let peerSecret: string;
  let peerReload: () => void;
  let peerReloads: number;
  let peerKeys: PeerKeys;
  const notifiers: PeerNotifier[] = [];
  const servers: Server[] = [];

  beforeEach(async () => {
    api = await FakeApiServer.start();
    held = new AdmittedRules({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      clusterNamespace: 'kubemod-system',
      checkAfterMs: 60_000,
    });
    peerSecret = 'shared';
    peerReload = () => undefined;
    peerReloads = 0;
    const keys = (peerKeys = new PeerKeys(
      () => peerSecret,
      async () => {
        peerReloads++;
        peerReload();
      },
      0,
    ));
    peer = await startTestServer(new RuleStore(), certs, {
      peer: {
        keys: () => keys.keys(),
        refresh: () => void keys.refresh(),
        receive: (n) => held.admit(n, null),
      },
    });
  });

  afterEach(async () => {
    await Promise.all(notifiers.splice(0).map((n) => n.stop()));
    for (const s of servers.splice(0)) s.close();
    held.stop();
    await peer.close();
    await api.close();
  });

  const notifier = (options: Partial<PeerNotifierOptions> & { secret?: string }) => {
    const n = new PeerNotifier({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      namespace: 'kubemod-system',
      port: 0,
      peers: [peer.url],
      keys: () => new PeerKeys(() => options.secret ?? 'shared').keys(),
      ...options,
    });
    notifiers.push(n);
    n.start();
    return n;
  };

  it('a peer told of a rule holds the dragnet requests it could reach until its store has it', async () => {
    expect(held.until('team-a', 10)).toBeNull();
    expect(await notifier({}).notify(version)).toEqual([]);
    // Told before the admission is answered: the peer waits for its own store, not for its scope.
    expect(held.until('team-a', 10)).not.toBeNull();
    expect(held.until('team-b', 10)).toBeNull();
    expect(held.rules()).toEqual([]);
    expect(held.knows('u-1', 3)).toBe(false);
    held.handlers().upsert({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { namespace: 'team-a', name: 'r', uid: 'u-1', generation: 3 },
    });
    expect(held.until('team-a', 10)).toBeNull();
  });

  it('a notice not signed with a shared key is refused (nobody else can make a replica wait), and says so', async () => {
    const registry = new Registry();
    const failures = await notifier({ secret: 'not-the-secret', registry }).notify(
      version,
      undefined,
      Date.now() + 300,
    );
    expect(held.until('team-a', 10)).toBeNull();
    expect(failures).toEqual([expect.objectContaining({ peer: peer.url, error: 'HTTP 401' })]);
    expect(failures[0].attempts).toBeGreaterThan(1);
    // Every series exists from the start (at 0); the one notice failed.
    expect(await notices(registry)).toEqual({ ok: 0, retried: 0, failed: 1 });
  });

  it('a peer that does not answer is passed over within the time given', async () => {
    const n = notifier({ peers: ['https://127.0.0.1:1'], timeoutMs: 200 });
    const start = Date.now();
    const failures = await n.notify(version, undefined, Date.now() + 500);
    expect(Date.now() - start).toBeLessThan(1000);
    expect(failures).toEqual([expect.objectContaining({ peer: 'https://127.0.0.1:1' })]);
  });

  it("addresses each replica at its own endpoint's port: two replicas on one address with different ports", async () => {
    const selfPort = Number(new URL(peer.url).port) + 1;
    api.put('endpointslices', slice('kubemod-webhook-service-a', Number(new URL(peer.url).port)));
    api.put('endpointslices', slice('kubemod-webhook-service-b', selfPort));
    // This replica listens on selfPort at the same address: only its own endpoint is left out.
    const n = notifier({ peers: undefined, selfIp: '127.0.0.1', port: selfPort });
    await eventually(() => n.urls().length > 0);
    expect(n.urls()).toEqual([peer.url]);
    expect(await n.notify(version)).toEqual([]);
    expect(held.until('team-a', 10)).not.toBeNull();
  });

  it('leaves terminating endpoints out, and tries a peer not ready once without reporting it', async () => {
    const flaky = await flakyPeer(100);
    servers.push(flaky.server);
    api.put('endpointslices', slice('a', Number(new URL(flaky.url).port), '127.0.0.1', { ready: false }));
    api.put('endpointslices', slice('b', 1, '127.0.0.1', { terminating: true }));
    const n = notifier({ peers: undefined });
    await eventually(() => n.urls().length > 0);
    expect(n.urls()).toEqual([flaky.url]);
    expect(await n.notify(version, undefined, Date.now() + 2000)).toEqual([]);
    expect(flaky.seen()).toBe(1);
  });

  it('tries a notice again until the peer takes it, within the time given', async () => {
    const flaky = await flakyPeer(2);
    servers.push(flaky.server);
    const registry = new Registry();
    const n = notifier({ peers: [flaky.url], registry });
    expect(await n.notify(version, undefined, Date.now() + 2000)).toEqual([]);
    expect(flaky.seen()).toBe(3);
    expect(await notices(registry)).toEqual({ ok: 0, retried: 1, failed: 0 });
  });

  it('gives a peer that took none of its last attempts one attempt per notice until it takes one', async () => {
    const flaky = await flakyPeer(1000);
    servers.push(flaky.server);
    const n = notifier({ peers: [flaky.url] });
    expect(await n.notify(version, undefined, Date.now() + 400)).toHaveLength(1);
    const first = flaky.seen();
    expect(first).toBeGreaterThan(1);
    const start = Date.now();
    expect(await n.notify(version, undefined, Date.now() + 2000)).toEqual([
      { peer: flaky.url, error: 'HTTP 503', attempts: 1 },
    ]);
    expect(Date.now() - start).toBeLessThan(500);
    expect(flaky.seen()).toBe(first + 1);
  });

  describe('across a change of the shared secret (a CA rollover, a renewed serving key)', () => {
    it('the replica that saw the change first still reaches one that has not', async () => {
      let secret = 'shared';
      const keys = new PeerKeys(() => secret);
      keys.keys();
      secret = 'rotated';
      const n = notifier({ keys: () => keys.keys() });
      expect(await n.notify(version)).toEqual([]);
      expect(held.until('team-a', 10)).not.toBeNull();
    });

    it('the replica that has not seen it yet still reaches one that has', async () => {
      // The peer held 'shared' and now 'rotated'; this replica still holds only 'shared'.
      peerKeys.keys();
      peerSecret = 'rotated';
      peerKeys.keys();
      expect(await notifier({}).notify(version)).toEqual([]);
      expect(held.until('team-a', 10)).not.toBeNull();
    });

    it('a replica started after the change reaches one that has not seen it, once that one re-reads the secret', async () => {
      const registry = new Registry();
      // The peer has only ever held 'shared', this replica only 'rotated': its 401 makes the peer re-read the secret.
      peerReload = () => void (peerSecret = 'rotated');
      const n = notifier({ secret: 'rotated', registry });
      expect(await n.notify(version, undefined, Date.now() + 2000)).toEqual([]);
      expect(peerReloads).toBe(1);
      expect(await notices(registry)).toEqual({ ok: 0, retried: 1, failed: 0 });
      expect(held.until('team-a', 10)).not.toBeNull();
    });
  });
});
