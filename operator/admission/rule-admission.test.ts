import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { cloneJson, JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { metadataOf } from '../../util/meta';
import { decodePatch, makeReview, postReview } from '../../webhook/testing';
import { createKubeClient } from '../../kube/kube';
import { generateCertificates } from '../../webhook/certs';
import { OperatorConfig, RunningOperator, startOperator } from '../start';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { labelRule } from '../testing/objects';
import { installedConfiguration, LoadedConfiguration } from '../testing/probed-cluster';

/*
 * The webhook never answers for an object from a store that has not seen a rule the API server already accepted:
 * the whole operator on the fake API server, the rule's write admitted by its validating endpoint and stored (so
 * the informer brings it) only a moment later, as the API server does.
 */

const deployment = (namespace: string): JsonObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace },
  spec: { replicas: 1 },
});

/** The value of `label` the dragnet's answer adds to a Deployment CREATE in `namespace` (undefined: none). */
async function labelled(op: RunningOperator, namespace: string, label: string): Promise<unknown> {
  const { review } = await postReview(
    op.webhook.url,
    '/dragnet-webhook?timeout=10s',
    makeReview('CREATE', deployment(namespace)),
    op.caBundle()!,
  );
  const ops = decodePatch(review) as Array<{ path: string; value: unknown }>;
  const add = ops.find((o) => o.path === `/metadata/labels/${label}` || o.path === '/metadata/labels');
  return add?.path === '/metadata/labels' ? (add.value as JsonObject)[label] : add?.value;
}

/** The dragnet registered, and an API server that loads its configuration at once (it answers the probes). */
function registered(api: FakeApiServer): LoadedConfiguration {
  api.put('mutatingwebhookconfigurations', installedConfiguration());
  return new LoadedConfiguration(api, 0);
}

/** The whole operator on the fake API server, ready. */
async function operatorOn(
  api: FakeApiServer,
  config: Partial<OperatorConfig> = {},
): Promise<RunningOperator> {
  const op = await startOperator(
    {
      clusterNamespace: 'kubemod-system',
      podNamespace: 'kubemod-system',
      webhookPort: 0,
      healthPort: 0,
      host: '127.0.0.1',
      certMode: 'self',
      certDir: '/nonexistent',
      extraHosts: ['127.0.0.1'],
      writeStatus: false,
      nativePolicies: 'off',
      peers: [],
      ...config,
    },
    { client: createKubeClient(api.access()), logger: silentLogger() },
  );
  await eventually(() => op.isReady(), 15_000);
  return op;
}

describe('a ModRule edit admitted a moment before the object it matches', () => {
  let api: FakeApiServer;
  let op: RunningOperator;
  let loaded: LoadedConfiguration;

  beforeEach(async () => {
    api = await FakeApiServer.start();
    loaded = registered(api);
    op = await operatorOn(api);
  });
  afterEach(async () => {
    await op.stop();
    loaded.stop();
    await api.close();
  });

  /** Stores a rule (generation 1) and waits for the store to have it. */
  async function storeRule(): Promise<JsonObject> {
    const stored = api.put('modrules', labelRule('team-a', 'label', 'version'));
    await eventually(() => op.store.snapshot().ruleCount === 1);
    return stored;
  }

  /** Sends the rule's edit (generation 2) through the validating endpoint; the edit is not stored. */
  async function admitEdit(stored: JsonObject): Promise<JsonObject> {
    const edit = cloneJson(stored);
    ((edit.spec as JsonObject).patch as JsonObject[])[0].value = '"two"';
    metadataOf(edit).generation = 2;
    const { review } = await postReview(
      op.webhook.url,
      '/validate-api-kubemod-io-v1beta1-modrule?timeout=10s',
      makeReview('UPDATE', edit, stored),
      op.caBundle()!,
    );
    expect(review.response?.allowed).toBe(true);
    return edit;
  }

  it('is answered with the edited rule: the request waits until the store has the admitted generation', async () => {
    const stored = await storeRule();
    expect(await labelled(op, 'team-a', 'version')).toBe('yes');
    const edited = await admitEdit(stored);
    // The API server stores the edit 150 ms after its admission; the informer brings it a moment later.
    setTimeout(() => api.put('modrules', edited), 150);
    const start = Date.now();
    expect(await labelled(op, 'team-a', 'version')).toBe('two');
    expect(Date.now() - start).toBeGreaterThanOrEqual(140);
    // Another namespace, which the rule cannot reach, is never held.
    const other = Date.now();
    await labelled(op, 'team-b', 'version');
    expect(Date.now() - other).toBeLessThan(100);
  });

  it('an edit whose write never lands (refused after the webhook) holds requests only until a read shows it', async () => {
    await admitEdit(await storeRule());
    const start = Date.now();
    // The store still has v1, and so has the API server: answered from v1 after one look-up (about 1 s).
    expect(await labelled(op, 'team-a', 'version')).toBe('yes');
    expect(Date.now() - start).toBeLessThan(3000);
  });
});

describe('a ModRule admitted while a peer replica cannot be told of it', () => {
  let api: FakeApiServer;
  let op: RunningOperator;
  let peer: Server;
  let attempts = 0;
  let loaded: LoadedConfiguration;

  beforeEach(async () => {
    api = await FakeApiServer.start();
    loaded = registered(api);
    // A replica that is up but cannot take notices (here it answers 503 to every one).
    const certs = generateCertificates({ hosts: ['127.0.0.1'] });
    attempts = 0;
    peer = createServer({ cert: certs.cert, key: certs.key }, (req, res) => {
      attempts++;
      req.resume();
      res.statusCode = 503;
      res.end();
    });
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    op = await operatorOn(api, { peers: [`https://127.0.0.1:${(peer.address() as AddressInfo).port}`] });
  });
  afterEach(async () => {
    await op.stop();
    loaded.stop();
    peer.close();
    await api.close();
  });

  it('is admitted with a warning naming the replica, after trying again within the admission', async () => {
    const rule = labelRule('team-a', 'label', 'version');
    metadataOf(rule).uid = 'u-new';
    metadataOf(rule).generation = 1;
    const start = Date.now();
    // The API server gives the webhook 3 s: 2 s to answer in, of which the notices may take the widening's 60 %.
    const { review } = await postReview(
      op.webhook.url,
      '/validate-api-kubemod-io-v1beta1-modrule?timeout=3s',
      makeReview('CREATE', rule),
      op.caBundle()!,
    );
    expect(Date.now() - start).toBeLessThan(2000);
    expect(review.response?.allowed).toBe(true);
    expect(attempts).toBeGreaterThan(1);
    expect(review.response?.warnings).toEqual([
      expect.stringMatching(
        /^modrule: 1 other replica\(s\) could not be told of ModRule team-a\/label \(https:\/\/127\.0\.0\.1:\d+: HTTP 503\); objects they admit before their own watch brings the rule \(normally within a second\) may miss it$/,
      ),
    ]);
  });
});
