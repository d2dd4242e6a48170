import { isJsonObject, JsonObject } from '../../util/json';
import { compareVersions, liveCovers, LiveScope, readLive } from '../../scope/ownership';
import { dragnetOf, scopeHash } from '../../scope/entry';
import { DRAGNET_WEBHOOK } from '../../kube/owned';

export interface LiveScopeViewOptions {
  webhookName?: string;
  /** `rules`: the operator narrows the registration (a failing write then holds it at the configured net). */
  mode?: 'rules' | 'wide';
  /** After the live registration changes, how long before rules it covers count as covered; default 1 s. */
  settleMs?: number;
  now?: () => number;
}

/** What this replica computed last: the registration's hash and the rules version it was computed at. */
export interface Computed {
  hash: string;
  rulesVersion: string;
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
  private changedAt = -Infinity;
  /**
   * The rules version this replica had when it last asked the API server for the configuration (a consistent read):
   * the view is at least that fresh. Only such a view may say "someone else's registration, the wide net, is in
   * place": a watch may still be on its way with a narrower one.
   */
  private freshAt: string | null = null;
  private settleTimer: NodeJS.Timeout | null = null;
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

  /** When this replica saw the registration's content change last (-Infinity: as it was when it started). */
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
   * net) by a read fresh enough, or the operator's stamped with rules at least that new, or exactly what this
   * replica `computed` from such rules; and it has been in place for settleMs.
   */
  covers(ruleVersion: string): boolean {
    const computed = this.computedLast;
    if (!this.seenAny) return false;
    const live = this.live;
    if (!live) return true; // no dragnet registered: nothing to wait for
    if (this.now() - this.changedAt < (this.options.settleMs ?? 1000)) return false;
    if (!ruleVersion) return false;
    if (live.ours ? liveCovers(live, ruleVersion) : this.fresh(ruleVersion)) return true;
    return (
      computed !== null &&
      computed.hash === this.hash &&
      compareVersions(computed.rulesVersion, ruleVersion) >= 0
    );
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
    return (
      this.heldWide() ??
      (this.failingWhy ? `it cannot be written: ${this.failingWhy}` : 'the API server has not applied it yet')
    );
  }

  stop(): void {
    if (this.settleTimer) clearTimeout(this.settleTimer);
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

  /** Notes when the registration's content changed (covers() waits settleMs after that). */
  private observe(): void {
    const webhook = this.dragnet();
    this.live = webhook ? readLive(this.config!, webhook) : null;
    const hash = this.live ? scopeHash(this.live.current) : null;
    if (!this.seenAny) {
      // The first sight is whatever was in force before this replica started: no settle time.
      this.seenAny = true;
      this.hash = hash;
    } else if (hash !== this.hash) {
      this.changedAt = this.now();
      this.hash = hash;
      if (this.settleTimer) clearTimeout(this.settleTimer);
      this.settleTimer = setTimeout(() => this.notify(), (this.options.settleMs ?? 1000) + 5);
      this.settleTimer.unref();
    }
    this.notify();
  }
}
