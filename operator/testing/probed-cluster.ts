// Test helper (excluded from the build): the fake API server with the dragnet configuration installed (probe entry
// included) and an admission step that plays the API server's probe webhook call, with the configuration loaded
// `lagMs` after it was stored (each API server applies configurations from its own watch).
import { JsonObject } from '../../util/json';
import { labelsOf } from '../../util/meta';
import { defaultConfigured } from '../../scope/defaults';
import { PROBE_LABEL, PROBE_SEEN_ANNOTATION, PROBE_WEBHOOK, probeTokenIn } from '../../scope/probe';
import { withScope } from '../../scope/entry';
import { FakeApiServer } from './fake-apiserver';

export const CONFIGURATION = 'kubemod-mutating-webhook-configuration';

/** The bundle's mutating configuration as installed: the dragnet with the configured net, and the probe. */
export function installedConfiguration(probe = true): JsonObject {
  const dragnet = withScope(
    { name: 'dragnet.kubemod.io', clientConfig: { caBundle: 'Q0E=' }, failurePolicy: 'Ignore' },
    defaultConfigured(),
  );
  const probeHook = {
    name: PROBE_WEBHOOK,
    clientConfig: { caBundle: 'Q0E=' },
    objectSelector: { matchLabels: { [PROBE_LABEL]: 'installed' } },
  };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: CONFIGURATION },
    webhooks: [{ name: 'mmodrule.kubemod.io', rules: [] }, dragnet, ...(probe ? [probeHook] : [])],
  };
}

/** The configuration an API server has loaded: what was stored `lagMs` ago. */
export class LoadedConfiguration {
  private readonly history: Array<{ at: number; config: JsonObject | undefined }> = [];
  private readonly timer: NodeJS.Timeout;
  /** Set to false to play an API server that never loads a new version. */
  loading = true;
  /** Probe Events seen (answered or not). */
  probes = 0;

  constructor(
    private readonly fake: FakeApiServer,
    public lagMs: number,
  ) {
    this.record();
    this.timer = setInterval(() => this.record(), 2);
    fake.webhooks = (resource, obj) => this.admit(resource, obj);
  }

  private record(): void {
    if (!this.loading) return;
    this.history.push({
      at: Date.now(),
      config: this.fake.get('mutatingwebhookconfigurations', null, CONFIGURATION),
    });
    if (this.history.length > 2000) this.history.splice(0, 1000);
  }

  /** The configuration loaded now. */
  loaded(): JsonObject | undefined {
    const cutoff = Date.now() - this.lagMs;
    let found = this.history[0]?.config;
    for (const h of this.history) if (h.at <= cutoff) found = h.config;
    return found;
  }

  private admit(resource: string, obj: JsonObject): JsonObject {
    const token = labelsOf(obj)[PROBE_LABEL];
    if (resource !== 'events' || !token) return obj;
    this.probes++;
    if (probeTokenIn(this.loaded() ?? null) !== token) return obj;
    const meta = (obj.metadata ?? {}) as JsonObject;
    return {
      ...obj,
      metadata: {
        ...meta,
        annotations: { ...((meta.annotations as JsonObject) ?? {}), [PROBE_SEEN_ANNOTATION]: token },
      },
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.fake.webhooks = null;
  }
}
