import { cloneJson, JsonObject } from '../../util/json';
import { LogLine, memoryLogger } from '../../util/logger';
import { metadataOf } from '../../util/meta';
import { makeReview, postReview } from '../../webhook/testing';
import { createKubeClient } from '../../kube/kube';
import { askProbe } from '../native/api';
import { OperatorConfig, RunningOperator, startOperator } from '../start';
import { eventually } from '../testing/eventually';
import { FakeApiServer, FakeResource } from '../testing/fake-apiserver';
import { namespace } from '../testing/objects';
import { labelRule, nativeRule as askingRule, NS, policyOf } from '../testing/native-controller';
import { installedConfiguration, LoadedConfiguration } from '../testing/probed-cluster';

/*
 * An edit of a rule served natively: before the edit's write returns, the old version's policy is out of force (its
 * binding deleted, and a probe no version of the policy answers any more), so an object written right after the
 * edit gets the new version only. The whole operator on the fake API server, whose admission step can be frozen to
 * play an API server whose policy caches have not caught up. The same on the real API server:
 * test/e2e/native-edits.e2e.ts.
 */

const BINDINGS: FakeResource = 'mutatingadmissionpolicybindings';
const BEHIND = 'native policy changed or deleted behind the operator; back on the webhook';

describe('an edit of a ModRule served natively', () => {
  let api: FakeApiServer;
  let op: RunningOperator;
  let loaded: LoadedConfiguration;
  let logs: LogLine[];

  beforeEach(async () => {
    api = await FakeApiServer.start();
    api.put('namespaces', namespace(NS));
    api.put('namespaces', namespace('default'));
    api.put('mutatingwebhookconfigurations', installedConfiguration());
    loaded = new LoadedConfiguration(api, 0);
    const log = memoryLogger();
    logs = log.lines;
    const config: OperatorConfig = {
      ...{ clusterNamespace: 'kubemod-system', podNamespace: 'kubemod-system' },
      ...{ webhookPort: 0, healthPort: 0, host: '127.0.0.1', extraHosts: ['127.0.0.1'] },
      ...{ certMode: 'self', certDir: '/nonexistent', writeStatus: false, peers: [] },
      ...{ nativePolicies: 'opt-in', nativeSettleMs: 30 },
    };
    op = await startOperator(config, { client: createKubeClient(api.access()), logger: log.logger });
    await eventually(() => op.isReady(), 15_000);
  });
  afterEach(async () => {
    await op.stop();
    loaded.stop();
    await api.close();
  });

  const native = () => op.store.nativeRules().has(`${NS}/team`);
  const bound = (resource: FakeResource = BINDINGS) =>
    api.get(resource, null, policyOf('team')) !== undefined;
  /** What the API server's admission answers a probe of the rule's policy with: its token, or none. */
  const probed = async () => {
    const answer = await askProbe(createKubeClient(api.access()), policyOf('team'), NS);
    return 'token' in answer ? answer.token : answer.refused;
  };

  /** A native rule labelling ConfigMaps team=v1, handed to its policy. */
  async function nativeRule(): Promise<JsonObject> {
    const stored = api.put('modrules', labelRule('team', 'team', 'v1'));
    await eventually(() => native() && bound(), 10_000);
    expect(await probed()).toEqual(expect.any(String));
    return stored;
  }

  /** Sends the rule's edit (team=v2, generation 2) through the validating endpoint; the edit is not stored. */
  async function admitEdit(stored: JsonObject, timeout = '10s') {
    const edit = cloneJson(stored);
    ((edit.spec as JsonObject).patch as JsonObject[])[0].value = 'v2';
    metadataOf(edit).generation = 2;
    const start = Date.now();
    const { review } = await postReview(
      op.webhook.url,
      `/validate-api-kubemod-io-v1beta1-modrule?timeout=${timeout}`,
      makeReview('UPDATE', edit, stored),
      op.caBundle()!,
    );
    expect(review.response?.allowed).toBe(true);
    return { edit, ms: Date.now() - start, warnings: review.response?.warnings ?? [] };
  }

  it('is answered once the API server no longer runs the old policy; the new version is native after it lands', async () => {
    const stored = await nativeRule();
    // The API server keeps running the old binding for 300 ms after it is deleted.
    api.admission.freeze();
    setTimeout(() => api.admission.thaw(), 300);
    const { edit, ms, warnings } = await admitEdit(stored);
    expect(ms).toBeGreaterThanOrEqual(280);
    expect(warnings).toEqual([]);
    // Out of force when the write returns: no binding, and no version of the policy answers a probe.
    expect(bound()).toBe(false);
    expect(await probed()).toBeUndefined();
    expect(native()).toBe(false);
    // Until the edit lands, nothing binds the old version again.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(bound()).toBe(false);
    api.put('modrules', edit);
    await eventually(() => native() && bound(), 10_000);
    const policy = api.get('mutatingadmissionpolicies', null, policyOf('team'));
    expect(JSON.stringify(policy?.spec)).toContain('v2');
    expect(logs.filter((l) => l.message === BEHIND)).toEqual([]);
    expect(logs).toContainEqual(
      expect.objectContaining({ message: 'ModRule back on the webhook for an edit', rule: `${NS}/team` }),
    );
  });

  it('not shown out of force within the budget: admitted with a warning, and counted', async () => {
    const stored = await nativeRule();
    api.admission.freeze();
    const { ms, warnings } = await admitEdit(stored, '3s');
    expect(ms).toBeLessThan(3000);
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(
          `^modrule: the previous version of ModRule ${NS}/team was served natively by ${policyOf('team')}; ` +
            'its binding was taken away, but the API servers could not be shown to have dropped it \\(1 of 1 API ' +
            'server\\(s\\) not shown to have dropped it in time \\(the API server: still runs it \\([0-9a-f]+\\)\\)\\)',
        ),
      ),
    ]);
    const metric = await op.webhook.registry.getSingleMetricAsString('modrule_native_edit_holdbacks_total');
    expect(metric).toContain('modrule_native_edit_holdbacks_total{result="unverified"} 1');
    expect(metric).toContain('modrule_native_edit_holdbacks_total{result="out_of_force"} 0');
  });

  it('an edit whose write never lands: the stored version is bound and native again', async () => {
    await admitEdit(await nativeRule());
    expect(bound()).toBe(false);
    // The store still has v1, and so has the API server: once a read shows the edit absent, v1 goes native again.
    await eventually(() => native() && bound(), 10_000);
    expect(await probed()).toEqual(expect.any(String));
    expect(JSON.stringify(api.get('mutatingadmissionpolicies', null, policyOf('team'))?.spec)).toContain(
      'v1',
    );
  });

  it('a Reject rule: its ValidatingAdmissionPolicy no longer refuses when the edit is answered', async () => {
    const vapBound = () => bound('validatingadmissionpolicybindings');
    const reject = (value: string) =>
      askingRule('team', {
        type: 'Reject',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.metadata.labels.forbidden', matchValue: value },
        ],
      });
    const stored = api.put('modrules', reject('yes'));
    await eventually(() => native() && vapBound(), 10_000);
    expect(await probed()).toEqual(expect.any(String));
    api.admission.freeze();
    setTimeout(() => api.admission.thaw(), 200);
    const edit = { ...reject('never'), metadata: { ...metadataOf(stored), generation: 2 } };
    const { review } = await postReview(
      op.webhook.url,
      '/validate-api-kubemod-io-v1beta1-modrule?timeout=10s',
      makeReview('UPDATE', edit, stored),
      op.caBundle()!,
    );
    expect(review.response?.allowed).toBe(true);
    expect(review.response?.warnings ?? []).toEqual([]);
    expect(vapBound()).toBe(false);
    expect(await probed()).toBeUndefined();
  });

  it('a change of metadata only (the spec as stored) leaves the policy in force', async () => {
    const stored = await nativeRule();
    const relabelled = cloneJson(stored);
    metadataOf(relabelled).labels = { owner: 'web' };
    const { review } = await postReview(
      op.webhook.url,
      '/validate-api-kubemod-io-v1beta1-modrule?timeout=10s',
      makeReview('UPDATE', relabelled, stored),
      op.caBundle()!,
    );
    expect(review.response?.allowed).toBe(true);
    expect(bound()).toBe(true);
    expect(native()).toBe(true);
  });
});
