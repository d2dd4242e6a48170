import { JsonObject } from '../../util/json';
import { messageOf } from '../../util/errors';
import {
  decide,
  Decision,
  DecisionContext,
  LiveScope,
  narrowingBlocked,
  readLive,
  ScopeStamp,
  stampCarries,
} from '../../scope/ownership';
import { dragnetOf, scopeHash } from '../../scope/entry';
import { Scope } from '../../scope/types';
import { scopeIncludes } from '../../scope/union';
import { DRAGNET_WEBHOOK } from '../../kube/owned';
import { KubeApiError } from '../../kube/kube';
import { ReconcileResult } from '../controller/controller';
import { ScopeControllerOptions } from './options';
import { Desired, DesiredScope, writtenFields } from './desired';
import { LiveScopeView } from './live';
import { ScopeMetrics } from './metrics';
import { NativeScopes } from './native-scopes';
import { ScopeWidener } from './widener';
import { ScopeWriter } from './writer';

/**
 * How long a replica waits after it starts before it narrows the registration. A peer answering an admission tells
 * the replicas it knows of, just before the answer, and tries again for 0.5 s (operator/admission/peers.ts); a
 * replica started after that notice hears nothing, and the rule reaches its store only once written and watched. So
 * a newcomer waits out that window, the write and its watch, with margin (the simulation's seed 22705: a replica
 * restarted between a peer's notice and the answer narrowed that rule away).
 */
const NARROW_AFTER_START_MS = 5_000;

/** What the rule follower works with: the scope controller's parts. */
export interface RuleFollowerParts {
  options: ScopeControllerOptions;
  /** This replica's writer id. */
  id: string;
  live: LiveScopeView;
  writer: ScopeWriter;
  desired: DesiredScope;
  widener: ScopeWidener;
  nativeScopes: NativeScopes;
  metrics: ScopeMetrics | null;
  stopped(): boolean;
  now(): number;
}

/** One computation: the live scope read, what the rules need, what the stamps decide. */
interface Computation {
  config: JsonObject;
  live: LiveScope;
  desired: Desired;
  hash: string;
  rulesVersion: string;
  decision: Decision;
  ctx: DecisionContext;
  nativeVersion: string | undefined;
}

/**
 * The scope controller's regular reconcile: computes the scope the rules in force need (stored and admitted here),
 * decides with the other replicas through the stamps (scope/ownership.ts) whether this replica writes it, and writes
 * it compare-and-swap; a scope the API server refuses or stores otherwise is written coarser, else the configured
 * net is put back. Narrowing never drops a rule admitted elsewhere and not seen here yet (the stamp's pending list).
 */
export class RuleFollower {
  /** This replica may narrow the registration from then on (DecisionContext.narrowFrom). */
  private readonly narrowFrom: number;

  constructor(private readonly parts: RuleFollowerParts) {
    this.narrowFrom = parts.now() + (parts.options.narrowAfterStartMs ?? NARROW_AFTER_START_MS);
  }

  /** Writes the registration the rules in force need, when the stamps say this replica should. */
  async run(): Promise<ReconcileResult | void> {
    const { live, options } = this.parts;
    if (this.parts.stopped() || !live.seen || !options.rulesReady()) return;
    const rulesVersion = options.rulesVersion();
    // Until discovery is in, kind-pinned rules would get the whole net: wait rather than write twice.
    if (rulesVersion === null || (options.mode === 'rules' && !options.discovery.catalog())) return;
    await this.parts.writer.refetch(rulesVersion);
    const computation = this.compute(rulesVersion);
    if (!computation) return;
    // Held at the configured net: computed all the same (the rules' status reports them in force through it, a rule
    // created meanwhile too), but nothing is written before the hold ends.
    const held = live.heldUntil();
    if (held > this.parts.now()) return this.later(held);
    if (!computation.decision.write) return this.unchanged(computation);
    return this.write(computation);
  }

  /** Whether the registration follows the rules (else it is the configured net: wide mode, or narrowing given up). */
  narrowing(): boolean {
    return this.parts.options.mode === 'rules' && !this.parts.live.givenUp;
  }

  private compute(rulesVersion: string): Computation | null {
    const { live: view, options, desired: scopes } = this.parts;
    const config = view.configuration;
    const webhook = view.dragnet();
    if (!config || !webhook) return null; // nothing registered: nothing to compute for
    const live = readLive(config, webhook, view.seenAt);
    const desired = scopes.compute(live, this.narrowing());
    scopes.report(desired.result, live);
    const hash = scopeHash(desired.registration);
    // A live registration wider than this one (it may not be narrowed yet) sends these rules' objects as well.
    const within = scopeIncludes(live.current, desired.registration) ? scopeHash(live.current) : null;
    view.setComputed({ hash, rulesVersion, within });
    if (desired.result) this.parts.widener.remember(hash, desired.result.index);
    view.notify();
    const nativeVersion = options.native?.policiesVersion() ?? undefined;
    const ctx: DecisionContext = {
      now: this.parts.now(),
      landed: (uid, generation, spec) => options.admitted?.knows(uid, generation, spec) ?? false,
      narrowFrom: this.narrowFrom,
    };
    const replica = { rulesVersion, writer: this.parts.id, mode: options.mode, nativeVersion };
    const decision = decide(live, desired.registration, replica, ctx);
    if (decision.reason === 'current') this.parts.nativeScopes.confirm(desired.result, view.givenUp);
    this.parts.metrics?.conditions.set(desired.registration.matchConditions.length);
    this.parts.metrics?.webhookRules.set(desired.registration.rules.length);
    return { config, live, desired, hash, rulesVersion, decision, ctx, nativeVersion };
  }

  /** Nothing to write: put back a rule admitted here that someone else's write left out; wait out a block. */
  private unchanged(c: Computation): ReconcileResult | void {
    const { options } = this.parts;
    options.logger.debug('dragnet registration unchanged', {
      reason: c.decision.reason,
      rulesVersion: c.rulesVersion,
    });
    // Someone else's write left out a rule admitted here and not stored yet: put it back (a union, never narrower).
    // A rule its stamp carries is covered, though the conditions read otherwise than ours (a writer that knew more
    // rules joins them into other expressions): widening for it would undo that write, and its writer redo it, for
    // ever (the simulation's seed 813).
    const left = (options.admitted?.versions() ?? []).filter((v) => !stampCarries(c.live.stamp, v));
    if (left.length > 0 && !scopeIncludes(c.live.current, c.desired.registration))
      this.parts.widener.repair();
    if (c.decision.reason === 'starting') return this.later(this.narrowFrom);
    const blocked = c.live.ours ? narrowingBlocked(c.live.stamp, c.ctx) : null;
    return blocked ? this.later(blocked.until) : undefined;
  }

  private stampOf(c: Computation): ScopeStamp {
    // Rules pending elsewhere that this store has not seen stay in the stamp (this registration covers them too):
    // until this replica's store has them, not merely because it counts them (what it holds in memory is lost if it
    // restarts, and the replica that admitted a rule may be gone too).
    const stored = (uid: string, generation: number) =>
      this.parts.options.admitted?.landed(uid, generation) ?? false;
    const pending = (c.live.stamp?.pending ?? []).filter(
      (p) => p.until > c.ctx.now && !stored(p.uid, p.generation),
    );
    return {
      hash: c.hash,
      rulesVersion: c.rulesVersion,
      writer: this.parts.id,
      mode: this.parts.options.mode,
      ...(c.nativeVersion ? { nativeVersion: c.nativeVersion } : {}),
      ...(pending.length > 0 ? { pending } : {}),
      at: c.ctx.now,
    };
  }

  private async write(c: Computation): Promise<ReconcileResult | void> {
    const { options, metrics } = this.parts;
    const { registration, result } = c.desired;
    let stored: JsonObject;
    try {
      stored = await this.parts.writer.write(c.config, registration, this.stampOf(c), c.live.configured);
    } catch (err) {
      return this.refused(c, err);
    }
    metrics?.writes.inc({ result: 'ok' });
    const back = dragnetOf(stored, options.webhookName ?? DRAGNET_WEBHOOK);
    if (!back || scopeHash(readLive(stored, back.webhook).current) !== c.hash) {
      // Stored differently (an API server before 1.28 drops matchConditions): a coarser scope, else the net.
      const next = this.parts.desired.stepDown(c.desired.full, result);
      if (next) {
        options.logger.error('the API server stored another dragnet registration; trying a coarser one', {
          precision: result?.precision,
          next,
        });
        return { requeueAfter: 0 };
      }
      await this.giveUp(stored, c.live.configured);
      return;
    }
    this.parts.nativeScopes.confirm(result, this.parts.live.givenUp);
    options.logger.info('dragnet registration updated', {
      reason: c.decision.reason,
      mode: options.mode,
      rulesVersion: c.rulesVersion,
      ...writtenFields(registration, result),
    });
  }

  /** A write the API server refused: decide again, write coarser, or hold the configured net (and throw). */
  private async refused(c: Computation, err: unknown): Promise<ReconcileResult> {
    const { options, metrics } = this.parts;
    if (err instanceof KubeApiError && err.status === 409) {
      metrics?.writes.inc({ result: 'conflict' });
      return { requeueAfter: 0 }; // someone wrote first: decide again on what they wrote
    }
    // A regex RE2 takes but CEL's does not, a limit of an older API server: the same rules, less precise.
    const invalid = err instanceof KubeApiError && (err.status === 422 || err.status === 400);
    const next = invalid ? this.parts.desired.stepDown(c.desired.full, c.desired.result) : null;
    if (next) {
      metrics?.writes.inc({ result: 'invalid' });
      options.logger.error('the API server refused the dragnet scope; trying a coarser one', {
        precision: c.desired.result?.precision,
        next,
        error: messageOf(err).slice(0, 2000),
      });
      return { requeueAfter: 0 };
    }
    // A rule needs more than the live registration sends and it cannot be written: the configured net, held.
    if (!scopeIncludes(c.live.current, c.desired.registration))
      await this.parts.widener.fallback(
        `cannot write the dragnet registration: ${messageOf(err)}`,
        this.parts.now() + 10_000,
      );
    throw err;
  }

  /** Computes again at `at` (a hold or a pending rule's time is up). */
  private later(at: number): ReconcileResult {
    return { requeueAfter: Math.max(0, at - this.parts.now()) + 10 };
  }

  /** The API server stored something other than what was written: put the configured net back, stop narrowing. */
  private async giveUp(stored: JsonObject, configured: Scope): Promise<void> {
    const { live, writer, options } = this.parts;
    live.giveUp();
    this.parts.nativeScopes.confirm(null, true);
    options.logger.error(
      'the stored dragnet registration differs from the one written; restoring the configured net',
    );
    if (writer.dragnetOf(stored)) await writer.write(stored, configured, null, configured);
  }
}
