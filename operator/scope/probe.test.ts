import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { defaultConfigured } from '../../scope/defaults';
import { ScopeStamp, stampAnnotations } from '../../scope/ownership';
import { PROBE_LABEL, PROBE_SEEN_ANNOTATION, PROBE_WEBHOOK } from '../../scope/probe';
import { scopeHash, withScope } from '../../scope/entry';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { apiServerUrls } from './apiservers';
import { LiveScopeView } from './live';
import { ProbeTarget, ScopeProbe } from './probe';

/** A configuration version as the operator writes it: stamped, its probe entry asking for `token`. */
function configuration(version: string, token: string): JsonObject {
  const scope = defaultConfigured();
  const stamp: ScopeStamp = {
    hash: scopeHash(scope),
    rulesVersion: '1',
    writer: '1-a',
    mode: 'rules',
    probe: token,
  };
  return {
    metadata: {
      name: 'kubemod-mutating-webhook-configuration',
      resourceVersion: version,
      annotations: stampAnnotations(stamp, scope),
    },
    webhooks: [
      withScope({ name: 'dragnet.kubemod.io' }, scope),
      { name: PROBE_WEBHOOK, objectSelector: { matchLabels: { [PROBE_LABEL]: token } } },
    ],
  };
}

/** An API server that has loaded the configuration with probe token `loaded` (or refuses, or is down). */
function apiServer(state: { loaded: string; down?: boolean; calls?: number }): KubeClient {
  return {
    request: async (_method, _path, options) => {
      state.calls = (state.calls ?? 0) + 1;
      if (state.down)
        throw new KubeApiError('POST events: connect ECONNREFUSED 10.0.0.2:6443', 0, 'ConnectionError');
      const event = options?.body as JsonObject;
      const token = ((event.metadata as JsonObject).labels as JsonObject)[PROBE_LABEL] as string;
      if (token !== state.loaded) return event;
      return {
        ...event,
        metadata: { ...(event.metadata as JsonObject), annotations: { [PROBE_SEEN_ANNOTATION]: token } },
      };
    },
    watch: () => {
      throw new Error('not used');
    },
  };
}

describe('ScopeProbe', () => {
  const probeOf = (main: KubeClient, others: ProbeTarget[] = []) => {
    const live = new LiveScopeView();
    const probe = new ScopeProbe({
      client: main,
      logger: silentLogger(),
      live,
      namespace: 'kubemod-system',
      apiServers: () => others,
    });
    return { live, probe };
  };

  it('proves a version only once every API server answers marked: one that lags holds it back', async () => {
    const a = { loaded: 't-new' };
    const b = { loaded: 't-old' };
    const { live, probe } = probeOf(apiServer(a), [{ name: 'https://10.0.0.2:6443', client: apiServer(b) }]);
    live.accept(configuration('20', 't-new'));
    expect(await probe.confirm(() => true, Date.now() + 50)).toEqual({ inForce: false });
    expect(live.proven()).toBe(false);
    b.loaded = 't-new';
    expect(await probe.confirm(() => true, Date.now() + 50)).toEqual({ inForce: true });
    expect(live.proven()).toBe(true);
  });

  it('proves a version, not a scope: the same scope written again is probed again', async () => {
    const a = { loaded: 't-1', calls: 0 };
    const { live, probe } = probeOf(apiServer(a));
    live.accept(configuration('20', 't-1'));
    expect((await probe.once()).inForce).toBe(true);
    const calls = a.calls;
    expect((await probe.once()).inForce).toBe(true);
    expect(a.calls).toBe(calls); // proven: no API call
    live.accept(configuration('22', 't-2'));
    expect((await probe.once()).inForce).toBe(false); // loaded is still t-1
  });

  it('does not wait for an API server that refuses connections (down), and says so', async () => {
    const a = { loaded: 't-1' };
    const b = { loaded: 't-0', down: true };
    const { live, probe } = probeOf(apiServer(a), [{ name: 'https://10.0.0.2:6443', client: apiServer(b) }]);
    live.accept(configuration('20', 't-1'));
    const got = await probe.confirm(() => true, Date.now() + 500);
    expect(got).toEqual({
      inForce: true,
      unverified: expect.stringMatching(/10\.0\.0\.2:6443 could not be probed/),
    });
  });
});

describe('apiServerUrls', () => {
  it("lists the ready API servers of the kubernetes Service's slice on its https port", () => {
    expect(
      apiServerUrls({
        ports: [{ name: 'https', port: 6443, protocol: 'TCP' }],
        endpoints: [
          { addresses: ['10.0.0.1'], conditions: { ready: true } },
          { addresses: ['10.0.0.2'], conditions: { ready: false } },
          { addresses: ['fd00::3'] },
          { addresses: ['10.0.0.4'], conditions: { terminating: true } },
        ],
      }),
    ).toEqual(['https://10.0.0.1:6443', 'https://[fd00::3]:6443']);
  });
});
