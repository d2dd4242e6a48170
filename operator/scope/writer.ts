import { isJsonObject, JsonObject } from '../../util/json';
import { ScopeStamp, stampAnnotations } from '../../scope/ownership';
import { newProbeToken, withProbeToken } from '../../scope/probe';
import { dragnetOf, withScope } from '../../scope/entry';
import { Scope } from '../../scope/types';
import { LiveScopeView } from './live';
import { KubeApiError, KubeClient } from '../../kube/kube';
import {
  DRAGNET_WEBHOOK,
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_CONFIGURATIONS_PATH,
} from '../../kube/owned';

export interface ScopeWriterOptions {
  client: KubeClient;
  live: LiveScopeView;
  configurationName?: string;
  webhookName?: string;
}

/**
 * Reads and writes the dragnet webhook's registration: compare-and-swap updates of the whole configuration (its
 * resourceVersion guards every other field, so the caBundle writer and this one never undo each other), and
 * consistent reads. Whatever it reads or writes, the live view takes.
 */
export class ScopeWriter {
  constructor(private readonly options: ScopeWriterOptions) {}

  private get name(): string {
    return this.options.configurationName ?? MUTATING_WEBHOOK_CONFIGURATION;
  }

  /** The dragnet entry of a configuration, or null. */
  dragnetOf(config: JsonObject): JsonObject | null {
    return dragnetOf(config, this.options.webhookName ?? DRAGNET_WEBHOOK)?.webhook ?? null;
  }

  /**
   * Writes `registration` into the dragnet entry of `config` (stamped, unless `stamp` is null) and returns the stored
   * configuration; a 409 means someone wrote first (the caller reads again).
   */
  async write(
    config: JsonObject,
    registration: Scope,
    stamp: ScopeStamp | null,
    configured: Scope,
  ): Promise<JsonObject> {
    const webhook = this.dragnetOf(config);
    const meta = isJsonObject(config.metadata) ? { ...config.metadata } : {};
    delete meta.managedFields;
    const annotations = isJsonObject(meta.annotations) ? { ...meta.annotations } : {};
    // The probe entry asks for a token new with this version, written together and named in the stamp: a probe
    // answered with it proves this version in force (not an older one that happened to have the same scope).
    const token = newProbeToken();
    if (stamp) Object.assign(annotations, stampAnnotations({ ...stamp, probe: token }, configured));
    meta.annotations = annotations;
    const hooks = withProbeToken(
      (Array.isArray(config.webhooks) ? config.webhooks : []).map((h) =>
        webhook && h === webhook ? withScope(webhook, registration) : h,
      ),
      token,
    );
    const stored = await this.options.client.request(
      'PUT',
      `${MUTATING_WEBHOOK_CONFIGURATIONS_PATH}/${encodeURIComponent(String(meta.name))}`,
      { body: { ...config, metadata: meta, webhooks: hooks } },
    );
    this.options.live.accept(stored);
    return stored;
  }

  /** Reads the configuration from the API server (a consistent read), noting the rules version it is fresh for. */
  async refetch(rulesVersion: string): Promise<void> {
    let got: JsonObject | null;
    try {
      got = await this.options.client.request(
        'GET',
        `${MUTATING_WEBHOOK_CONFIGURATIONS_PATH}/${encodeURIComponent(this.name)}`,
      );
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      got = null;
    }
    this.options.live.acceptRead(got, rulesVersion);
  }
}
