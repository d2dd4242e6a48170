import { isJsonObject, JsonObject } from '../../util/json';
import { metaString } from '../../util/meta';
import { compareVersions, liveCovers, LiveScope, readLive } from '../../scope/ownership';
import { dragnetOf, scopeHash } from '../../scope/entry';
import { DRAGNET_WEBHOOK } from '../../kube/owned';

export interface LiveScopeViewOptions {
  webhookName?: string;
  /** `rules`: the operator narrows the registration (a failing write then holds it at the configured net). */
  mode?: 'rules' | 'wide';
  now?: () => number;
}

/** What this replica computed last: the registration's hash and the rules version it was computed at. */
export interface Computed {
  hash: string;
  rulesVersion: string;
  /**
   * The hash of the live registration it was computed against when that one sends all of it (a wider one, held by
   * another replica's pending rules), else null: that live registration covers the same rules.
   */
  within?: string | null;
}

/**
 * What this replica knows of the live dragnet registration, shared by the scope controller (which writes it), the
 * Ready gate and the status (which read it): the newest version of the configuration it has seen (from its watch,
 * its own reads and writes), when its content last changed, what this replica computed last, why it is held at the
 * configured net or cannot be written, and so whether it sends the objects of a rule at a given resourceVersion.
 */
export class LiveScopeView {
  private config: JsonObject | null = null;
  private seenAny = false;
  private live: LiveScope | null = null;
  private hash: string | null = null;
  private changedAt = 0;
  /** When the configuration's version held was first seen, on this replica's clock (the stamp's times are read so). */
  private seenVersionAt: { version: string; at: number } | null = null;
  /**
   * The rules version this replica had when it last asked the API server for the configuration (a consistent read):
   * the view is at least that fresh. Only such a view may say "someone else's registration, the wide net, is in
   * place": a watch may still be on its way with a narrower one.
   */
  private freshAt: string | null = null;
  /** The configuration version proven in force (resourceVersion), by a probe or its settle time. */
  private provenVersion: string | null = null;
  private readonly listeners = new Set<() => void>();
  private computedLast: Computed | null = null;
  /** Why the last computation could not write the registration (null: it could). */
  private failingWhy: string | null = null;
  /** This replica put the configured net back: why, and until when it holds it (the stamp tells the others). */
  private held: { reason: string; until: number } | null = null;
  /** A write the API server stored differently: the replica stopped narrowing (the configured net is back). */
  private givenUpFlag = false;

  constructor(private readonly options: LiveScopeViewOptions = {}) {}

  /** The configuration held (null: none, or not seen yet). */
  get configuration(): JsonObject | null {
    return this.config;
  }

  /** When the configuration's version held was first seen (this replica's clock): readLive's `seenAt`. */
  get seenAt(): number | undefined {
    return this.seenVersionAt?.at;
  }

  /** Whether any version (or its absence) has been seen. */
  get seen(): boolean {
    return this.seenAny;
  }

  /** The dragnet webhook entry of the configuration held, or null. */
  dragnet(): JsonObject | null {
    return this.config
      ? (dragnetOf(this.config, this.options.webhookName ?? DRAGNET_WEBHOOK)?.webhook ?? null)
      : null;
  }

  /** The live registration as read from the configuration held (null: no dragnet). */
  scope(): LiveScope | null {
    return this.live;
  }

  /** When this replica saw the registration's content change last (or first saw it). */
  get changedSince(): number {
    return this.changedAt;
  }

  /** Hash of the live registration's content (null: no dragnet). */
  get currentHash(): string | null {
    return this.hash;
  }

  /** Takes a version of the configuration unless it is older than the one held (a late watch event). */
  accept(obj: JsonObject | null): boolean {
    const version = (o: JsonObject | null) =>
      o && isJsonObject(o.metadata) && typeof o.metadata.resourceVersion === 'string'
        ? o.metadata.resourceVersion
        : '';
    if (obj && this.config && compareVersions(version(obj), version(this.config)) < 0) return false;
    this.config = obj;
    this.observe();
    return true;
  }

  /** Takes the answer of a consistent read made when the store was at `rulesVersion`. */
  acceptRead(obj: JsonObject | null, rulesVersion: string): void {
    this.accept(obj);
    this.freshAt = rulesVersion;
    this.notify();
  }

  /** Calls `listener` when covers() may answer differently. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * Whether the live registration sends the objects of a rule at `ruleVersion`: it is someone else's (the configured
   * net) by a read fresh enough, or the operator's stamped with rules at least that new, or what this replica
   * `computed` from such rules, or a wider one than that; and the API servers use this version of the configuration
   * (proven).
   */
  covers(ruleVersion: string): boolean {
    const computed = this.computedLast;
    if (!this.seenAny) return false;
    const live = this.live;
    // No dragnet registered (the configuration deleted, or its entry): nothing is sent, nothing is in force.
    if (!live || !this.proven()) return false;
    if (!ruleVersion) return false;
    if (live.ours ? liveCovers(live, ruleVersion) : this.fresh(ruleVersion)) return true;
    return (
      computed !== null &&
      (computed.hash === this.hash || computed.within === this.hash) &&
      compareVersions(computed.rulesVersion, ruleVersion) >= 0
    );
  }

  /** The API servers use this version of the configuration (operator/scope/probe.ts proved it, or it settled). */
  prove(version: string): void {
    if (this.provenVersion === version) return;
    this.provenVersion = version;
    this.notify();
  }

  /** Whether the configuration held is proven in force. */
  proven(): boolean {
    const version = this.config ? metaString(this.config, 'resourceVersion') : '';
    return version !== '' && this.provenVersion === version;
  }

  /** Notes what this replica computed last (covers() counts a live registration equal to it). */
  setComputed(computed: Computed): void {
    this.computedLast = computed;
  }

  /** Why the last computation could not write the registration; null once one could. */
  setFailing(why: string | null): void {
    this.failingWhy = why;
  }

  /** Why the last computation could not write the registration (null: it could). */
  get failing(): string | null {
    return this.failingWhy;
  }

  /** This replica put the configured net back and holds it until `until`. */
  hold(reason: string, until: number): void {
    this.held = { reason, until };
  }

  /** Until when this replica holds the configured net after a fallback (0: it does not). */
  heldUntil(): number {
    return this.held?.until ?? 0;
  }

  /** The API server stored another registration than the one written: this replica stops narrowing. */
  giveUp(): void {
    this.givenUpFlag = true;
  }

  /** Whether this replica stopped narrowing (giveUp). */
  get givenUp(): boolean {
    return this.givenUpFlag;
  }

  /** Why the registration is held at the configured net (by this replica or by another's stamp), or null. */
  heldWide(): string | null {
    if (this.givenUpFlag) return 'the API server stored another dragnet registration than the one written';
    const live = this.live;
    const wide = !live?.ours || scopeHash(live.current) === scopeHash(live.configured);
    if (this.failingWhy && live && wide && (this.options.mode ?? 'rules') === 'rules')
      return `a narrower registration cannot be written: ${this.failingWhy}`;
    const now = this.now();
    const hold = live?.ours ? live.stamp?.hold : undefined;
    if (hold !== undefined && hold > now)
      return live?.stamp?.reason ?? 'a narrower registration could not be written';
    return this.held && this.held.until > now ? this.held.reason : null;
  }

  /** Why a rule's objects may not be sent yet: the registration is held, or cannot be written (status). */
  whyNotSent(): string {
    if (this.seenAny && !this.live)
      return 'the dragnet webhook is not registered (no dragnet.kubemod.io entry in kubemod-mutating-webhook-configuration): re-apply bundle.yaml';
    return (
      this.heldWide() ??
      (this.failingWhy ? `it cannot be written: ${this.failingWhy}` : 'the API server has not applied it yet')
    );
  }

  stop(): void {
    this.listeners.clear();
  }

  notify(): void {
    for (const l of this.listeners) l();
  }

  private fresh(ruleVersion: string): boolean {
    return this.freshAt !== null && compareVersions(this.freshAt, ruleVersion) >= 0;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /**
   * Notes when the registration's content changed (a configuration that cannot be probed counts only once in place
   * for the settle time after that). The first sight counts as a change too: nothing says when it was loaded.
   */
  private observe(): void {
    const webhook = this.dragnet();
    const version = metaString(this.config, 'resourceVersion');
    if (this.seenVersionAt?.version !== version) this.seenVersionAt = { version, at: this.now() };
    this.live = webhook ? readLive(this.config!, webhook, this.seenAt) : null;
    const hash = this.live ? scopeHash(this.live.current) : null;
    if (!this.seenAny || hash !== this.hash) {
      this.seenAny = true;
      this.changedAt = this.now();
      this.hash = hash;
    }
    this.notify();
  }
}
