import { isJsonObject, JsonObject } from '../util/json';
import { withoutScope } from './compute';
import { parseScope, scopeHash, scopeJson, readScope } from './entry';
import { Scope } from './types';
import { scopeIncludes } from './union';
import { metadataOf } from '../util/meta';

/** What the operator wrote last, stamped on the configuration (see ScopeStamp). */
export const SCOPE_ANNOTATION = 'modrule.kubemod.io/dragnet-scope';
/** The net as installed (bundle.yaml, or a user's edit), kept while the live registration is the operator's. */
export const CONFIGURED_ANNOTATION = 'modrule.kubemod.io/dragnet-configured';

/** `rules`: the scope follows the ModRules; `wide`: the configured net stays as it is (KubeMod's behaviour). */
export type ScopeMode = 'rules' | 'wide';

/**
 * A ModRule the writer widened the registration for when it admitted it, before any store had it: no replica may
 * narrow it away until its own store has that uid at that generation (or newer), or `until` (ms since the epoch) passed.
 */
export interface PendingRule {
  uid: string;
  generation: number;
  until: number;
  /**
   * A digest of the spec admitted: two writes of one version admitted at once (either may land) carry different
   * specs, and covering one does not cover the other. Absent in stamps of earlier releases.
   */
  spec?: string;
}

/** Who wrote the live registration, from which rules, and what: the replicas' common ground. */
export interface ScopeStamp {
  /** scopeHash of what was written: a live registration with another hash was changed by someone else. */
  hash: string;
  /** The ModRule resourceVersion the writer's store had reached. */
  rulesVersion: string;
  /** `START-ID`: the writer's process start (ms) and a random id. A later start wins a tie. */
  writer: string;
  mode: ScopeMode;
  /**
   * The resourceVersion of the last change to the native policies the writer had seen (absent: none). A replica that
   * saw a later one (a policy deleted behind the operators' backs) writes even at equal rules: its rules went back
   * to the webhook, and a writer that is gone would otherwise keep the registration that skips them.
   */
  nativeVersion?: string;
  /** Rules admitted into this registration before they were stored (see PendingRule). */
  pending?: PendingRule[];
  /** The configured net was put back because a narrower one could not be written: nobody narrows before this time. */
  hold?: number;
  /**
   * The writer's clock when it wrote (ms since the epoch): `hold` and the pending rules' `until` are times on that
   * clock, which a reader turns into its own (readLive's `seenAt`): replicas' clocks need not agree.
   */
  at?: number;
  /** Why the registration is held at the configured net. */
  reason?: string;
  /**
   * The probe token written with this version of the configuration (scope/probe.ts): new at every write, so that a
   * probe answered by an API server still on an older version with the same scope proves nothing about this one.
   */
  probe?: string;
}

/** The live dragnet registration as the operator reads it. */
export interface LiveScope {
  current: Scope;
  /** The widest the scope may be: the stamped configured net while the registration is ours, else the live one. */
  configured: Scope;
  stamp: ScopeStamp | null;
  /** Whether the live registration is the one the stamp describes (nobody changed it since). */
  ours: boolean;
}

function annotationsOf(config: JsonObject): Record<string, string> {
  const meta = metadataOf(config);
  const out: Record<string, string> = {};
  if (isJsonObject(meta.annotations))
    for (const [k, v] of Object.entries(meta.annotations)) if (typeof v === 'string') out[k] = v;
  return out;
}

function parseStamp(text: string | undefined): ScopeStamp | null {
  if (!text) return null;
  try {
    const v: unknown = JSON.parse(text);
    if (!isJsonObject(v)) return null;
    const { hash, rulesVersion, writer, mode, nativeVersion, pending, hold, reason, probe, at } = v;
    if (typeof hash !== 'string' || typeof rulesVersion !== 'string' || typeof writer !== 'string')
      return null;
    const stamp: ScopeStamp = { hash, rulesVersion, writer, mode: mode === 'wide' ? 'wide' : 'rules' };
    if (Array.isArray(pending))
      stamp.pending = pending.flatMap((p) =>
        isJsonObject(p) &&
        typeof p.uid === 'string' &&
        typeof p.generation === 'number' &&
        typeof p.until === 'number'
          ? [
              {
                uid: p.uid,
                generation: p.generation,
                until: p.until,
                ...(typeof p.spec === 'string' ? { spec: p.spec } : {}),
              },
            ]
          : [],
      );
    if (typeof nativeVersion === 'string') stamp.nativeVersion = nativeVersion;
    if (typeof hold === 'number') stamp.hold = hold;
    if (typeof reason === 'string') stamp.reason = reason;
    if (typeof probe === 'string') stamp.probe = probe;
    if (typeof at === 'number') stamp.at = at;
    return stamp;
  } catch {
    return null;
  }
}

/**
 * The stamp's times on the reader's clock: a stamp first seen at `seenAt` (the reader's clock) was written about then,
 * so its times move by what separates that from the writer's `at`. Seen later (a replica started since), its times
 * come later too: holds and pending rules last longer, never shorter, than the writer meant.
 */
function onReaderClock(stamp: ScopeStamp, seenAt: number | undefined): ScopeStamp {
  if (stamp.at === undefined || seenAt === undefined) return stamp;
  const shift = seenAt - stamp.at;
  return {
    ...stamp,
    at: seenAt,
    ...(stamp.hold !== undefined ? { hold: stamp.hold + shift } : {}),
    ...(stamp.pending ? { pending: stamp.pending.map((p) => ({ ...p, until: p.until + shift })) } : {}),
  };
}

/**
 * Reads the live registration of the dragnet webhook (`webhook`) of `config` (its annotations); `seenAt`, when this
 * version of the configuration was first seen on the reader's clock, puts the stamp's times on that clock.
 */
export function readLive(config: JsonObject, webhook: JsonObject, seenAt?: number): LiveScope {
  const annotations = annotationsOf(config);
  const current = readScope(webhook);
  const parsed = parseStamp(annotations[SCOPE_ANNOTATION]);
  const stamp = parsed && onReaderClock(parsed, seenAt);
  const ours = stamp !== null && stamp.hash === scopeHash(current);
  const stored = ours ? parseScope(annotations[CONFIGURED_ANNOTATION] ?? '') : null;
  // Someone else's registration (a fresh install, a re-applied bundle, an edit) is the configured net from now on,
  // without what an earlier scope left in it (kubectl apply keeps fields its manifest never had).
  const configured = stored ?? withoutScope(current);
  return { current, configured, stamp, ours };
}

/** The annotations the operator writes with a registration. */
export function stampAnnotations(stamp: ScopeStamp, configured: Scope): Record<string, string> {
  return {
    [SCOPE_ANNOTATION]: JSON.stringify(stamp),
    [CONFIGURED_ANNOTATION]: JSON.stringify(scopeJson(configured)),
  };
}

const WELL_FORMED = /^[1-9][0-9]*$/;

/**
 * Orders two resourceVersions of the same resource, as k8s.io/apimachinery's resourceversion.CompareResourceVersion
 * does (etcd-backed API servers give integers, and recent Kubernetes documents them as comparable); 0 when either
 * is not a well-formed one.
 */
export function compareVersions(a: string, b: string): number {
  if (!WELL_FORMED.test(a) || !WELL_FORMED.test(b)) return 0;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareWriters(a: string, b: string): number {
  const [as, ...ar] = a.split('-');
  const [bs, ...br] = b.split('-');
  const d = compareVersions(as, bs) || Number(as) - Number(bs);
  if (d !== 0) return Math.sign(d);
  const ra = ar.join('-');
  const rb = br.join('-');
  return ra < rb ? -1 : ra > rb ? 1 : 0;
}

/** This replica: the rules its store holds (a ModRule resourceVersion) and its writer id. */
export interface Replica {
  rulesVersion: string;
  writer: string;
  mode: ScopeMode;
  /** The last change to the native policies this replica saw (see ScopeStamp). */
  nativeVersion?: string;
}

/** Whether to write `desired`, and why (logged). */
export interface Decision {
  write: boolean;
  reason:
    | 'current'
    | 'behind'
    | 'foreign'
    | 'newer-rules'
    | 'newer-native'
    | 'own-update'
    | 'newer-writer'
    | 'older-writer'
    | 'held'
    | 'pending'
    | 'starting';
}

/** What this replica knows besides its rules: the time, and whether its store has a rule at a generation. */
export interface DecisionContext {
  now: number;
  landed: (uid: string, generation: number, spec?: string) => boolean;
  /**
   * This replica narrows only from then on: an admission another replica answered before this one started listening
   * to peer notices may rely on the live registration (covered already, so nothing in the stamp says so), and its rule
   * reaches this store only once written. Undefined: no such wait.
   */
  narrowFrom?: number;
}

/**
 * Why the live registration may not be narrowed now ('held': it is the configured net put back after a failure,
 * until the stamp's hold time; 'pending': it covers rules admitted elsewhere that this store has not seen yet), and
 * until when at the latest; null when nothing holds it.
 */
export function narrowingBlocked(
  stamp: ScopeStamp | null,
  ctx: DecisionContext,
): { reason: 'held' | 'pending'; until: number } | null {
  if (!stamp) return null;
  if (stamp.hold !== undefined && stamp.hold > ctx.now) return { reason: 'held', until: stamp.hold };
  const waiting = (stamp.pending ?? []).filter(
    (p) => p.until > ctx.now && !ctx.landed(p.uid, p.generation, p.spec),
  );
  if (waiting.length === 0) return null;
  return { reason: 'pending', until: Math.min(...waiting.map((p) => p.until)) };
}

/**
 * Whether the stamp's writer counted a rule version as pending: its registration sends that rule's objects (a writer
 * keeps every pending rule covered), whatever the text of its conditions.
 */
export function stampCarries(
  stamp: ScopeStamp | null,
  version: { uid: string; generation: number; spec?: string },
): boolean {
  // A later generation stands for this one (it was written over it); at the same one, only the same spec does.
  return (stamp?.pending ?? []).some(
    (p) =>
      p.uid === version.uid &&
      (p.generation > version.generation ||
        (p.generation === version.generation && p.spec !== undefined && p.spec === version.spec)),
  );
}

/**
 * Whether this replica writes its registration. Writes go only forward in (rulesVersion, writer) order, so
 * replicas computing at once converge on one registration without flapping: one behind the last writer's rules waits
 * for its store (it could miss a rule the other reported Ready), and at equal rules the later-started replica wins.
 */
export function decide(
  live: LiveScope,
  desired: Scope,
  me: Replica,
  ctx: DecisionContext = { now: Date.now(), landed: () => false },
): Decision {
  const hash = scopeHash(desired);
  if (scopeHash(live.current) === hash) return { write: false, reason: 'current' };
  // Only a registration that sends at least what the live one sends may replace it while it is held or pending.
  const blocked = live.ours ? narrowingBlocked(live.stamp, ctx) : null;
  if (blocked && !scopeIncludes(desired, live.current)) return { write: false, reason: blocked.reason };
  if (
    live.ours &&
    ctx.narrowFrom !== undefined &&
    ctx.now < ctx.narrowFrom &&
    !scopeIncludes(desired, live.current)
  )
    return { write: false, reason: 'starting' };
  const cmp = live.stamp ? compareVersions(me.rulesVersion, live.stamp.rulesVersion) : 1;
  if (cmp < 0) return { write: false, reason: 'behind' };
  if (!live.ours) return { write: true, reason: 'foreign' };
  if (cmp > 0) return { write: true, reason: 'newer-rules' };
  // Equal rules: one that saw a later change of the native policies goes first (0: either has seen none). The writer
  // itself waits too when its stamp carries a later change than it saw (a widening at admission carries forward the
  // change the registration it widened was written for).
  const native = compareVersions(me.nativeVersion ?? '', live.stamp!.nativeVersion ?? '');
  if (native < 0) return { write: false, reason: 'behind' };
  if (live.stamp!.writer === me.writer) return { write: true, reason: 'own-update' };
  if (native > 0) return { write: true, reason: 'newer-native' };
  return compareWriters(me.writer, live.stamp!.writer) > 0
    ? { write: true, reason: 'newer-writer' }
    : { write: false, reason: 'older-writer' };
}

/**
 * Whether the live registration sends the objects of a rule at `ruleVersion` (its resourceVersion): someone else's
 * registration is the configured net (as wide as installed), ours covers the rules its writer had seen.
 */
export function liveCovers(live: LiveScope, ruleVersion: string): boolean {
  if (!live.ours) return true;
  return compareVersions(live.stamp!.rulesVersion, ruleVersion) >= 0 && WELL_FORMED.test(ruleVersion);
}
