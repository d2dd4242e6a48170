import { isJsonObject, JsonObject } from '../util/json';
import { annotationsOf } from '../util/meta';

/*
 * How the operator knows the API server uses a dragnet registration it wrote, not just stored it: the API server
 * loads webhook configurations from its own watch, and says nothing when it has. The mutating configuration has one
 * more webhook, the probe, whose objectSelector asks for a label with a token of the dragnet registration written
 * with it (the same PUT). A dry-run create of an Event carrying that label reaches the probe webhook, which marks it,
 * only on an API server that has loaded that version of the configuration; and the API server applies a
 * configuration object as a whole, so the dragnet entry of that version is in force there too.
 */

/** The probe webhook's name in the mutating configuration. */
export const PROBE_WEBHOOK = 'dragnet-probe.kubemod.io';
/** The label the probe's objectSelector asks for; its value is the token of the dragnet registration in force. */
export const PROBE_LABEL = 'modrule.kubemod.io/dragnet-probe';
/** What the probe webhook answers with: this annotation, set to the token it saw. */
export const PROBE_SEEN_ANNOTATION = 'modrule.kubemod.io/dragnet-probe-seen';

/** The token of the probe entry of a configuration (null: no probe entry, or not set by the operator). */
export function probeTokenIn(config: JsonObject | null): string | null {
  const hooks = config && Array.isArray(config.webhooks) ? config.webhooks : [];
  const probe = hooks.find((h) => isJsonObject(h) && h.name === PROBE_WEBHOOK);
  if (!isJsonObject(probe) || !isJsonObject(probe.objectSelector)) return null;
  const labels = probe.objectSelector.matchLabels;
  const token = isJsonObject(labels) ? labels[PROBE_LABEL] : undefined;
  return typeof token === 'string' ? token : null;
}

/** Whether the configuration has a probe entry. */
export function hasProbe(config: JsonObject | null): boolean {
  const hooks = config && Array.isArray(config.webhooks) ? config.webhooks : [];
  return hooks.some((h) => isJsonObject(h) && h.name === PROBE_WEBHOOK);
}

/**
 * A new probe token (a label value: 12 hex characters). Math.random is enough: it only has to differ from the tokens
 * of the configuration's earlier versions, and a seeded run (the simulation) must draw the same ones.
 */
export function newProbeToken(): string {
  return Array.from({ length: 12 }, () => Math.floor(Math.random() * 16).toString(16)).join('');
}

/** The webhooks with the probe entry asking for `token` (others unchanged; none added when there is no probe). */
export function withProbeToken(hooks: readonly unknown[], token: string): unknown[] {
  return hooks.map((h) =>
    isJsonObject(h) && h.name === PROBE_WEBHOOK
      ? { ...h, objectSelector: { matchLabels: { [PROBE_LABEL]: token } } }
      : h,
  );
}

/** The Event the operator creates (dry run) in `namespace` to ask whether the registration `token` is in force. */
export function probeEvent(namespace: string, token: string): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: 'modrule-dragnet-probe-', namespace, labels: { [PROBE_LABEL]: token } },
    involvedObject: { apiVersion: 'v1', kind: 'Namespace', name: namespace, namespace },
    reason: 'DragnetProbe',
    message: 'dry run: is the dragnet registration in force?',
    type: 'Normal',
  };
}

/** Whether a probe's answer (the Event as the dry run would have stored it) was marked with the token. */
export function probeSeen(created: JsonObject, token: string): boolean {
  return annotationsOf(created)[PROBE_SEEN_ANNOTATION] === token;
}
