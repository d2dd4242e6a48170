import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { CompiledRule } from '../../rule/compile';
import { reachOf } from '../../scope/compute';
import { addsNothing, ScopeIndex } from '../../scope/cover';
import {
  compareVersions,
  LiveScope,
  PendingRule,
  readLive,
  ScopeMode,
  ScopeStamp,
  stampCarries,
} from '../../scope/ownership';
import { scopeHash } from '../../scope/entry';
import { Scope } from '../../scope/types';
import { scopeIncludes, UNION_LEVELS, unionScopes } from '../../scope/union';
import { RuleVersion } from '../rules/admitted';
import { KubeApiError } from '../../kube/kube';
import { LiveScopeView } from './live';
import { Confirmation, ScopeProbe } from './probe';
import { probeTokenIn } from '../../scope/probe';
import { ScopeWriter } from './writer';

/** How a ModRule's admission ended for the registration. */
export type WidenOutcome =
  /** The live registration sends the rule's objects and the API servers use it (`unverified`: only settled, why). */
  | { kind: 'covered'; unverified?: string }
  /** Widened for it, and the API servers use the widened registration (`unverified`: only settled, why). */
  | { kind: 'widened'; unverified?: string }
  /** The configured (wide) net was put back instead: `reason` says why; `confirmed` whether it is known in force. */
  | { kind: 'fallback'; reason: string; confirmed: boolean }
  /** Nothing that sends its objects could be written: the rule must not be admitted. */
  | { kind: 'failed'; reason: string };

/** Why nothing can be sent: the dragnet's configuration, or its entry, is gone (deleted by hand, an uninstall). */
export const NOT_REGISTERED =
  'the dragnet webhook is not registered (no dragnet.kubemod.io entry in kubemod-mutating-webhook-configuration): ' +
  're-apply bundle.yaml';

/** The `unverified` part of an outcome from a confirmation. */
function unverifiedOf(got: Confirmation): { unverified?: string } {
  return got.inForce && got.unverified ? { unverified: got.unverified } : {};
}

/** What the widener needs of the dragnet scope it widens for. */
export interface WidenerContext {
  live: LiveScopeView;
  writer: ScopeWriter;
  probe: ScopeProbe;
  logger: Logger;
  /** This replica's writer id (ScopeStamp.writer). */
  id: string;
  /** False in `wide` mode, or after the scope gave up narrowing: the configured net covers every rule. */
  narrowing(): boolean;
  /** The scope's mode, for the stamp of a widening; default 'rules'. */
  mode?: ScopeMode;
  rulesVersion(): string | null;
  /** The last change to the native policies this replica saw (ScopeStamp.nativeVersion); null: none. */
  nativeVersion?(): string | null;
  /** The registration the rules in force (stored and admitted) need, for a live registration's configured net. */
  desired(live: LiveScope): { registration: Scope; index: ScopeIndex | null };
  /** Rules admitted and not stored yet, for the stamp of a widening. */
  pending(): RuleVersion[];
  clusterNamespace: string;
  /** How long a pending rule stays protected in the stamp; default 30 s. */
  pendingTtlMs?: number;
  /** How long the configured net is held after a fallback; default 60 s. */
  holdMs?: number;
  /** Told about every write (metrics) and fallback. */
  onWrite?(result: 'ok' | 'conflict' | 'invalid' | 'failed'): void;
  onFallback?(reason: string, until: number): void;
  /** Asks the scope controller's worker to serve the waiters (the one writer of the registration). */
  request(): void;
  now(): number;
}

/** How a widening ended, before any fallback. */
type Widening =
  | { kind: 'covered'; unverified?: string }
  | { kind: 'widened'; unverified?: string }
  | { kind: 'error'; reason: string };

/** What one widening has tried so far. */
interface WideningState {
  /** The UNION_LEVELS entry tried now (coarser after the API server refused or changed a union). */
  level: number;
  wrote: boolean;
  /** Why it has not succeeded yet. */
  reason: string;
}

interface Waiter {
  widenBy: number;
  until: number;
  resolve: (outcome: WidenOutcome) => void;
}

function maxVersion(a: string | undefined, b: string | null): string {
  if (!a) return b ?? '';
  if (!b) return a;
  return compareVersions(a, b) >= 0 ? a : b;
}

/**
 * Makes the dragnet registration send a ModRule's objects before its admission is answered. The common case costs
 * nothing: the live registration already covers it (a rule shaped like others in force) and has been confirmed.
 * Otherwise the admission waits while the scope controller's worker (the one writer of the registration) writes the
 * union of the live registration and what the rules need (never narrower: another rule, admitted a moment ago, may
 * rely on the live one), coalescing admissions that arrive meanwhile into one write, and probes until the API server
 * uses it. When that does not succeed by `widenBy`, it puts the configured net back (held, so no replica narrows it
 * for a while) and says so; when even that cannot be written, the rule fails.
 */
export class ScopeWidener {
  /** The index of each registration this replica computed or widened to, by hash (the fast path's test). */
  private readonly indexes = new Map<string, ScopeIndex>();
  private readonly queue: Waiter[] = [];

  constructor(private readonly ctx: WidenerContext) {}

  /** Notes the index of a registration computed from the rules in force. */
  remember(hash: string, index: ScopeIndex): void {
    if (this.indexes.size >= 64) this.indexes.clear();
    this.indexes.set(hash, index);
  }

  /** Whether admissions (or a repair) wait for a widening: the worker serves them before anything else. */
  get waiting(): boolean {
    return this.queue.length > 0;
  }

  /** Widens for the admitted rules once more (the live registration left one out), unless a widening is queued. */
  repair(): void {
    if (this.queue.length > 0) return;
    const now = this.ctx.now();
    this.queue.push({ widenBy: now + 5000, until: now + 8000, resolve: () => undefined });
    this.ctx.request();
  }

  /** Resolves when the registration sends `rule`'s objects, or with why not, by `until` at the latest. */
  async ensure(rule: CompiledRule, widenBy: number, until: number): Promise<WidenOutcome> {
    // A consistent read first: what this replica's watch shows may be older than a narrower scope another replica
    // wrote a moment ago (before it heard of this rule), and "covered" must hold for what is stored now.
    await this.ctx.writer.refetch(this.ctx.rulesVersion() ?? '').catch(() => undefined);
    const live = this.ctx.live.scope();
    if (this.ctx.live.seen && this.coveredBy(live, rule)) {
      const got = await this.ctx.probe.confirm(() => this.stillCovers(rule), widenBy);
      if (got.inForce) return { kind: 'covered', ...unverifiedOf(got) };
    }
    return new Promise((resolve) => {
      this.queue.push({ widenBy, until, resolve });
      this.ctx.request();
    });
  }

  /** Answers every waiting admission with what the operator is doing instead (it stops). */
  abort(reason: string): void {
    for (const w of this.queue.splice(0)) w.resolve({ kind: 'failed', reason });
  }

  /**
   * Whether the live registration (null: no dragnet at all: nothing is sent) sends the rule's objects, as far as the
   * fast path can tell: only a registration the operator wrote (stamped, with its probe token) can be proven in
   * force; someone else's goes through a widening, which stamps it first.
   */
  private coveredBy(live: LiveScope | null, rule: CompiledRule): boolean {
    if (!live || !live.ours) return false;
    if (!this.ctx.narrowing()) return true;
    const index = this.indexes.get(this.ctx.live.currentHash ?? '');
    // An admitted rule is served by the webhook in full (its native policy comes later): it needs every object,
    // which a native rule's group of the same shape (sending only what its guards decline) does not cover.
    return !!index && addsNothing(index, reachOf(rule, this.ctx.clusterNamespace));
  }

  /** For the probe: the live registration still covers the rule (else widen again). */
  private stillCovers(rule: CompiledRule): boolean {
    const live = this.ctx.live.scope();
    if (this.coveredBy(live, rule)) return true;
    return !!live && scopeIncludes(live.current, this.ctx.desired(live).registration);
  }

  /**
   * From the scope controller's worker: one widening for every admission waiting now (those that arrive meanwhile
   * wait for the next), then each is answered.
   */
  async serve(): Promise<void> {
    const batch = this.queue.splice(0);
    if (batch.length === 0) return;
    const widenBy = Math.min(...batch.map((w) => w.widenBy));
    const until = Math.min(...batch.map((w) => w.until));
    const outcome = await this.widen(widenBy).then(
      (o) => o,
      (err: unknown) => ({ kind: 'error' as const, reason: messageOf(err) }),
    );
    const final =
      outcome.kind === 'covered' || outcome.kind === 'widened'
        ? outcome
        : await this.fallback(outcome.reason, until);
    for (const w of batch) w.resolve(final);
  }

  /** One widening: the union of the live registration and what every rule in force needs, written and confirmed. */
  private async widen(widenBy: number): Promise<Widening> {
    const state: WideningState = {
      level: 0,
      wrote: false,
      reason: 'the dragnet registration could not be widened in time',
    };
    await this.ctx.writer.refetch(this.ctx.rulesVersion() ?? '');
    while (this.ctx.now() < widenBy) {
      const step = await this.widenOnce(widenBy, state);
      if (step !== 'again') return step;
    }
    return { kind: 'error', reason: state.reason };
  }

  /** One try: the union of the live scope as it is now, confirmed as it is, or written; 'again': decide again. */
  private async widenOnce(widenBy: number, state: WideningState): Promise<Widening | 'again'> {
    const config = this.ctx.live.configuration;
    const webhook = config ? this.ctx.writer.dragnetOf(config) : null;
    if (!config || !webhook) return { kind: 'error', reason: NOT_REGISTERED };
    const live = readLive(config, webhook, this.ctx.live.seenAt);
    const desired = this.ctx.desired(live);
    // Not narrowing (wide mode, or narrowing given up): the live scope as it is, stamped so it can be proven.
    const union = this.ctx.narrowing()
      ? unionScopes(live.current, desired.registration, UNION_LEVELS[state.level])
      : live.current;
    const hash = scopeHash(union);
    const liveHash = scopeHash(live.current);
    const isLive = () => this.ctx.live.currentHash === hash;
    // Covered already: the union adds nothing, or another replica wrote the live one counting every rule admitted
    // here (its conditions may read otherwise than ours, joined with rules it knows: widening again would undo its
    // write, and it redo it, for as long as the admission lasts: the simulation's seed 1103). Someone else's
    // configuration (a re-applied bundle) is written once more, stamped and with its probe token, so that it can be
    // proven in force: the same scope, nothing narrower.
    const mine = this.ctx.pending();
    const carried = mine.length > 0 && mine.every((v) => stampCarries(live.stamp, v));
    if ((hash === liveHash || carried) && live.ours && probeTokenIn(config) === live.stamp?.probe) {
      if (desired.index && hash === liveHash) this.remember(hash, desired.index);
      const confirmed = await this.confirmed(widenBy, () => this.ctx.live.currentHash === liveHash);
      if (confirmed.kind === 'covered' && state.wrote) return { ...confirmed, kind: 'widened' };
      // Not confirmed while still live: out of time. Else the live registration moved on: decide again.
      return confirmed.kind === 'covered' || isLive() ? confirmed : 'again';
    }
    let stored: JsonObject;
    try {
      stored = await this.ctx.writer.write(config, union, this.stampFor(live, hash), live.configured);
    } catch (err) {
      return this.writeFailed(err, state);
    }
    this.ctx.onWrite?.('ok');
    state.wrote = true;
    const back = this.ctx.writer.dragnetOf(stored);
    if (!back || scopeHash(readLive(stored, back).current) !== hash) {
      state.reason = 'the API server stored another dragnet registration than the one written';
      return ++state.level >= UNION_LEVELS.length ? { kind: 'error', reason: state.reason } : 'again';
    }
    if (desired.index) this.remember(hash, desired.index);
    this.ctx.logger.info('dragnet registration widened for an admitted ModRule', {
      rules: union.rules.length,
      level: UNION_LEVELS[state.level],
    });
    const confirmed = await this.confirmed(widenBy, isLive);
    if (confirmed.kind === 'covered') return { ...confirmed, kind: 'widened' };
    // The live registration moved on (another writer): decide again on what it is now.
    if (!isLive()) return 'again';
    return { kind: 'error', reason: 'the API server did not use the widened dragnet registration in time' };
  }

  /** A write the API server refused: read again after a conflict, a coarser union after an invalid one, else stop. */
  private async writeFailed(err: unknown, state: WideningState): Promise<Widening | 'again'> {
    state.reason = messageOf(err);
    if (err instanceof KubeApiError && err.status === 409) {
      this.ctx.onWrite?.('conflict');
      await this.ctx.writer.refetch(this.ctx.rulesVersion() ?? '');
      return 'again';
    }
    if (err instanceof KubeApiError && (err.status === 400 || err.status === 422)) {
      this.ctx.onWrite?.('invalid');
      if (++state.level < UNION_LEVELS.length) return 'again';
    } else this.ctx.onWrite?.('failed');
    return { kind: 'error', reason: state.reason };
  }

  /** Covered once the probe (or the settle time) says the API server uses the live registration. */
  private async confirmed(
    by: number,
    stillLive: () => boolean,
  ): Promise<{ kind: 'covered'; unverified?: string } | { kind: 'error'; reason: string }> {
    const got = await this.ctx.probe.confirm(stillLive, by);
    return got.inForce
      ? { kind: 'covered', ...unverifiedOf(got) }
      : { kind: 'error', reason: 'the API server did not use the dragnet registration in time' };
  }

  /** The stamp of a widening: every rule the live one covered and this replica's store and admitted rules. */
  private stampFor(live: LiveScope, hash: string, extra: Partial<ScopeStamp> = {}): ScopeStamp {
    const now = this.ctx.now();
    const kept = (live.stamp?.pending ?? []).filter((p) => p.until > now);
    const until = now + (this.ctx.pendingTtlMs ?? 30_000);
    const mine: PendingRule[] = this.ctx
      .pending()
      .map((v) => ({ uid: v.uid, generation: v.generation, until, ...(v.spec ? { spec: v.spec } : {}) }));
    // Another spec of a version admitted here stays (another replica admitted it at once; either may land).
    const key = (p: PendingRule) => `${p.uid}/${p.generation}/${p.spec ?? ''}`;
    const ours = new Set(mine.map(key));
    // Bounded: the annotation must stay small (a flood of rules widens for a few at a time anyway).
    const pending = [...kept.filter((p) => !ours.has(key(p))), ...mine].slice(-500);
    // A union is at least as wide as the registration it widened: it keeps the native policy change that one was
    // written for, so no replica that has not seen that change narrows it, this one included (scope/ownership.ts).
    const nativeVersion = maxVersion(live.stamp?.nativeVersion, this.ctx.nativeVersion?.() ?? null);
    return {
      hash,
      rulesVersion: maxVersion(live.stamp?.rulesVersion, this.ctx.rulesVersion()),
      writer: this.ctx.id,
      mode: this.ctx.mode ?? 'rules',
      ...(nativeVersion ? { nativeVersion } : {}),
      ...(pending.length > 0 ? { pending } : {}),
      at: now,
      ...extra,
    };
  }

  /** Puts the configured net back, held for holdMs; 'failed' when even that cannot be written by `until`. */
  async fallback(reason: string, until: number): Promise<WidenOutcome> {
    const holdUntil = this.ctx.now() + (this.ctx.holdMs ?? 60_000);
    this.ctx.logger.warn('the dragnet registration falls back to the configured net', { reason });
    for (;;) {
      try {
        await this.ctx.writer.refetch(this.ctx.rulesVersion() ?? '');
        const config = this.ctx.live.configuration;
        const webhook = config ? this.ctx.writer.dragnetOf(config) : null;
        if (!config || !webhook) return { kind: 'failed', reason: `${reason}; ${NOT_REGISTERED}` };
        const live = readLive(config, webhook, this.ctx.live.seenAt);
        const hash = scopeHash(live.configured);
        if (live.ours && scopeHash(live.current) !== hash) {
          const stamp = this.stampFor(live, hash, { hold: holdUntil, reason });
          await this.ctx.writer.write(config, live.configured, stamp, live.configured);
          this.ctx.onWrite?.('ok');
        }
        this.ctx.live.hold(reason, holdUntil);
        this.ctx.onFallback?.(reason, holdUntil);
        const got = await this.ctx.probe.confirm(
          () => !this.ctx.live.scope()?.ours || this.ctx.live.currentHash === hash,
          until,
        );
        return { kind: 'fallback', reason, confirmed: got.inForce };
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409 && this.ctx.now() < until) {
          this.ctx.onWrite?.('conflict');
          continue;
        }
        this.ctx.onWrite?.('failed');
        return {
          kind: 'failed',
          reason: `${reason}; putting the configured net back failed too: ${messageOf(err)}`,
        };
      }
    }
  }
}
