import { Registry } from 'prom-client';
import { silentLogger } from '../../util/logger';
import { RuleStore } from '../../store/rules';
import { generateCertificates } from '../../webhook/certs';
import { RunningWebhook } from '../../webhook/server';
import { AdmittedRules } from '../rules/admitted';
import { createKubeClient } from '../../kube/kube';
import { PeerNotifier } from './peers';
import { FakeApiServer } from '../testing/fake-apiserver';
import { startTestServer } from '../../webhook/testing';

describe('replicas tell each other of the rules they admit', () => {
  let api: FakeApiServer;
  let peer: RunningWebhook;
  let held: AdmittedRules;
  const notifiers: PeerNotifier[] = [];

  beforeEach(async () => {
    api = await FakeApiServer.start();
    const certs = generateCertificates({ hosts: ['127.0.0.1'] });
    held = new AdmittedRules({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      clusterNamespace: 'kubemod-system',
      checkAfterMs: 60_000,
    });
    peer = await startTestServer(new RuleStore(), certs, {
      peer: { key: () => 'shared', receive: (notice) => held.admit(notice, null) },
    });
  });

  afterEach(async () => {
    await Promise.all(notifiers.splice(0).map((n) => n.stop()));
    held.stop();
    await peer.close();
    await api.close();
  });

  const notifier = (key: string, registry?: Registry) => {
    const n = new PeerNotifier({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      namespace: 'kubemod-system',
      port: 0,
      peers: [peer.url],
      key: () => key,
      registry,
    });
    notifiers.push(n);
    return n;
  };

  it('a peer told of a rule holds the dragnet requests it could reach until its store has it', async () => {
    const version = { namespace: 'team-a', name: 'r', uid: 'u-1', generation: 3 };
    expect(held.until('team-a', 10)).toBeNull();
    await notifier('shared').notify(version);
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

  it('a notice not signed with the shared key is refused (nobody else can make a replica wait)', async () => {
    const registry = new Registry();
    await notifier('not-the-key', registry).notify({
      namespace: 'team-a',
      name: 'r',
      uid: 'u-1',
      generation: 1,
    });
    expect(held.until('team-a', 10)).toBeNull();
    const sent = await registry.getSingleMetric('modrule_peer_notices_total')!.get();
    // Both series exist from the start (at 0); the one notice failed.
    expect(sent.values.filter((v) => v.value > 0)).toEqual([
      expect.objectContaining({ labels: { result: 'failed' }, value: 1 }),
    ]);
  });

  it('a peer that does not answer is passed over within the timeout', async () => {
    const n = new PeerNotifier({
      client: createKubeClient(api.access()),
      logger: silentLogger(),
      namespace: 'kubemod-system',
      port: 0,
      peers: ['https://127.0.0.1:1'],
      key: () => 'shared',
      timeoutMs: 200,
    });
    notifiers.push(n);
    const start = Date.now();
    await n.notify({ namespace: 'team-a', name: 'r', uid: 'u-1', generation: 1 });
    expect(Date.now() - start).toBeLessThan(1000);
  });
});
