import { isJsonObject, JsonObject } from '../../util/json';

// The vocabulary of a ModRule's status: what each source of the operator may say about a rule (its facet), the
// conditions besides Ready, and how another replica's per-replica word is recognised. Composed by
// operator/status/compose.ts, written by operator/status/reporter.ts (StatusReporter).

/** Kubernetes caps condition messages at 32 KiB; a readable status needs far less. */
const MAX_MESSAGE = 4096;

export const READY_REASON_VALID = 'Valid';
export const READY_REASON_INVALID = 'Invalid';
/** Ready's message of a valid rule in force about which no source says anything. */
export const IN_EFFECT = 'ModRule is valid and in effect';

/**
 * The sources that speak about a rule, most important first: the first one whose facet takes Ready False decides
 * Ready, and the problems of a rule still in effect are named in Ready's message in this order.
 */
export const FACET_SOURCES = [
  'quarantine',
  'registration',
  'references',
  'unknownKind',
  'outsideNet',
  'failing',
  'unenforced',
  'conflicts',
  'serving',
  'podControllers',
] as const;
export type FacetSource = (typeof FACET_SOURCES)[number];

/**
 * The abnormal-true conditions besides Ready (True while the problem holds), and what each says once it cleared:
 * a cleared condition stays, False, so that its lastTransitionTime says when.
 */
export const CONDITION_TYPES = {
  UnknownKind: { reason: 'KindsServed', message: 'every kind the rule names is served' },
  OutsideNet: {
    reason: 'InConfiguredNet',
    message: "the dragnet's configured net sends every kind the rule names",
  },
  Failing: { reason: 'NotFailing', message: 'no run-time error in the recent window' },
  NotEnforced: {
    reason: 'NoneRecently',
    message: 'no object in the recent window that enforcing the rule would have changed or rejected',
  },
  Conflicting: { reason: 'NoConflict', message: 'no other rule found in conflict with this one' },
  ReferenceMissing: { reason: 'ReferencesFound', message: 'every object the rule refers to exists' },
  WideFallback: { reason: 'Narrowed', message: 'the dragnet registration follows the rules again' },
} as const;
export type ConditionType = keyof typeof CONDITION_TYPES;

/** What a source says of Ready. */
export interface ReadyVerdict {
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** An abnormal-true condition a source holds True; its message's first sentence is named in Ready's message. */
export interface FacetCondition {
  type: ConditionType;
  reason: string;
  message: string;
}

/**
 * What one source says about one rule. A per-replica word (quarantine, run-time failures) writes
 * `until <time> on replica <name>` in its message: other replicas leave it alone until then (see holdOf).
 */
export interface Facet {
  /** Ready's verdict: False takes the rule out of force (Degraded...); True says how it is served (Native...). */
  ready?: ReadyVerdict;
  /** A condition of its own, True while this facet is set. */
  condition?: FacetCondition;
  /** status.servedBy. */
  servedBy?: 'Webhook' | 'Native';
  /** status.podControllers: the controller kinds whose pod templates the rule reaches (spec.podControllers). */
  podControllers?: readonly string[];
}

/**
 * How a source speaks about a rule: one facet per source and rule. The reporter composes the rule's whole status
 * from its facets and writes it when it differs from what the rule carries.
 */
export interface StatusFacets {
  /** Sets (or replaces) `source`'s facet of a rule; a no-op when it says the same as before. */
  set(namespace: string, name: string, source: FacetSource, facet: Facet): void;
  /** Clears it: its condition turns False, Ready composes without it. */
  clear(namespace: string, name: string, source: FacetSource): void;
}

/** A condition as composed, without lastTransitionTime (added when written). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
}

/** The Ready condition as composed. */
export interface ReadyCondition extends Condition {
  type: 'Ready';
  status: 'True' | 'False';
}

/** The whole status subresource as composed. */
export interface ComposedStatus {
  observedGeneration?: number;
  /** Ready first, then the abnormal-true conditions, then conditions of types this operator does not own. */
  conditions: Array<Condition | JsonObject>;
  servedBy?: 'Webhook' | 'Native';
  podControllers?: readonly string[];
}

/** A message cut to what a readable status needs. */
export function truncateMessage(s: string): string {
  return s.length <= MAX_MESSAGE ? s : `${s.slice(0, MAX_MESSAGE - 3)}...`;
}

/** The timestamp form conditions and messages use (RFC 3339, whole seconds). */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

const HOLD = /\buntil (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) on replica ([^\s:;,()]+)/;

/** A per-replica word: the replica that said it and until when it stands (ms), or null. */
export function holdOf(message: unknown): { until: number; replica: string } | null {
  const m = typeof message === 'string' ? HOLD.exec(message) : null;
  const until = m ? Date.parse(m[1]) : NaN;
  return m && Number.isFinite(until) ? { until, replica: m[2] } : null;
}

/** The first sentence of a condition's message: what Ready's message names of it. */
export function summaryOf(message: string): string {
  const end = message.indexOf('. ');
  return end < 0 ? message.replace(/\.$/, '') : message.slice(0, end);
}

/** The conditions a rule carries now. */
export function conditionsOf(status: JsonObject): JsonObject[] {
  return Array.isArray(status.conditions) ? status.conditions.filter(isJsonObject) : [];
}
