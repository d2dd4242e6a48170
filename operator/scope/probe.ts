import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { metaString } from '../../util/meta';
import { probeEvent, probeSeen, probeTokenIn } from '../../scope/probe';
import { sleep } from '../../kube/backoff';
import { isTransient, isUnanswered, KubeClient } from '../../kube/kube';
import { LiveScopeView } from './live';

/** Connection errors that say nothing listens there (a timeout does not: that API server may be hung). */
const DOWN = /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|ECONNRESET/;

/** One API server to probe directly (operator/scope/apiservers.ts), besides the one the client reaches. */
export interface ProbeTarget {
  /** Its address, as logs name it. */
  name: string;
  client: KubeClient;
}

export interface ScopeProbeOptions {
  client: KubeClient;
  logger: Logger;
  live: LiveScopeView;
  /** Where the probe Events are created (dry run): the operator's own namespace. */
  namespace: string;
  /** The API servers besides the one `client` reaches, each probed directly; none when absent. */
  apiServers?: () => readonly ProbeTarget[];
  /**
   * Where a configuration cannot be probed (no probe entry, written by someone else, probes refused): how long it
   * must be in place before it counts, unverified; default 1 s.
   */
  settleMs?: number;
  /** After probes were refused (4xx), when to try probing again; default 30 s. */
  retryRefusedMs?: number;
  now?: () => number;
}

/** What a confirmation found: in force (proven, or only settled where it could not be proven: why), or not. */
export type Confirmation = { inForce: true; unverified?: string } | { inForce: false };

/**
 * Tells whether the API servers use the live dragnet configuration (scope/probe.ts): a dry-run probe Event created
 * through each API server must come back marked with the token written with the scope, which only an API server
 * that loaded that configuration does. What is proven is a configuration version (its resourceVersion): one that
 * comes back with the same scope later is a new version, probed again. A configuration that cannot be probed (no
 * probe entry, someone else's, probes refused) counts only once in place for settleMs, and the caller is told
 * it is unverified, and why.
 */
export class ScopeProbe {
  /** The configuration version proven in force on every API server probed, and whether it was only settled. */
  private proven: { version: string; unverified?: string } | null = null;
  /** Per configuration version being proven: the API servers that answered marked. */
  private marked: { version: string; targets: Set<string>; misses: Map<string, number> } = {
    version: '',
    targets: new Set(),
    misses: new Map(),
  };
  private refusedUntil = 0;
  private refusal = '';

  constructor(private readonly options: ScopeProbeOptions) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Whether the live configuration version is proven in force (no API call). */
  get confirmedNow(): boolean {
    const version = this.version();
    return version !== '' && this.proven?.version === version && !this.proven.unverified;
  }

  /**
   * Resolves once the API servers use the live configuration, or not in force at `by`, or as soon as `stillLive()`
   * says the scope the caller relies on is no longer live (it then decides again).
   */
  async confirm(stillLive: () => boolean, by: number): Promise<Confirmation> {
    for (let step = 5; ; step = Math.min(step * 2, 100)) {
      if (!stillLive()) return { inForce: false };
      const got = await this.once();
      if (got.inForce) return got;
      const left = by - this.now();
      if (left <= 0) return { inForce: false };
      await sleep(Math.min(step, left));
    }
  }

  /** One look: proven already, proven by this round of probes, settled where it cannot be probed, or not yet. */
  async once(): Promise<Confirmation> {
    const { live } = this.options;
    const version = this.version();
    if (!version || !live.dragnet()) return { inForce: false };
    if (this.proven?.version === version) return { inForce: true, unverified: this.proven.unverified };
    const why = this.unprovable();
    if (why !== null) {
      if (this.now() - live.changedSince < (this.options.settleMs ?? 1000)) return { inForce: false };
      this.proved(version, why);
      return { inForce: true, unverified: why };
    }
    // Per version, and held locally: a probe of an older version that answers late (another admission's) must not
    // count for this one.
    if (this.marked.version !== version) this.marked = { version, targets: new Set(), misses: new Map() };
    const marked = this.marked;
    const token = probeTokenIn(live.configuration)!;
    const targets = [{ name: '', client: this.options.client }, ...(this.options.apiServers?.() ?? [])];
    const pending = targets.filter((t) => !marked.targets.has(t.name));
    const answers = await Promise.all(pending.map((t) => this.probe(t, token)));
    const unreachable: string[] = [];
    pending.forEach((t, i) => {
      if (answers[i] === 'marked') marked.targets.add(t.name);
      else if (answers[i] === 'unreachable') {
        const misses = (marked.misses.get(t.name) ?? 0) + 1;
        marked.misses.set(t.name, misses);
        if (misses >= 3) unreachable.push(t.name);
      }
    });
    if (answers.includes('refused') || this.version() !== version) return { inForce: false };
    if (marked.targets.size + unreachable.length < targets.length) return { inForce: false };
    // An API server that cannot be reached at all cannot admit anything either; said, not waited for.
    const unverified = unreachable.length
      ? `API server ${unreachable.join(', ')} could not be probed (unreachable)`
      : undefined;
    this.proved(version, unverified);
    return { inForce: true, unverified };
  }

  /** Notes a version in force (the live view tells the Ready gate). */
  private proved(version: string, unverified: string | undefined): void {
    this.proven = { version, unverified };
    this.options.live.prove(version);
  }

  /** Why the live configuration cannot be probed (null: it can). */
  private unprovable(): string | null {
    const { live } = this.options;
    if (this.refusedUntil > this.now()) return `probes are refused: ${this.refusal}`;
    const token = probeTokenIn(live.configuration);
    if (token === null)
      return 'the configuration has no probe webhook (dragnet-probe.kubemod.io): re-apply bundle.yaml';
    const scope = live.scope();
    if (!scope?.ours || scope.stamp?.probe !== token)
      return 'the dragnet entry was written by someone else, not the operator';
    return null;
  }

  /** The live configuration's resourceVersion ('' when there is none). */
  private version(): string {
    const config = this.options.live.configuration;
    return config ? metaString(config, 'resourceVersion') : '';
  }

  /** One dry-run probe through one API server. */
  private async probe(
    target: ProbeTarget,
    token: string,
  ): Promise<'marked' | 'not yet' | 'refused' | 'unreachable'> {
    const { namespace } = this.options;
    try {
      // Bounded: a hung API server must not hold the loop (it counts as not there yet, and is asked again).
      const created = await target.client.request(
        'POST',
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        { body: probeEvent(namespace, token), query: { dryRun: 'All' }, timeoutMs: 2000 },
      );
      return probeSeen(created, token) ? 'marked' : 'not yet';
    } catch (err) {
      if (!isTransient(err)) {
        // Not allowed to create Events here (RBAC changed): settle time only, for a while, and said.
        this.refusedUntil = this.now() + (this.options.retryRefusedMs ?? 30_000);
        this.refusal = messageOf(err);
        this.options.logger.warn(
          'cannot probe the dragnet scope; it counts once settled, unverified, for now',
          {
            namespace,
            apiServer: target.name || undefined,
            error: this.refusal,
          },
        );
        return 'refused';
      }
      // An extra API server that refuses connections is down (it admits nothing either); one that does not answer
      // in time may be hung and wake up with an old configuration: asked again. The main client's are retried.
      const down = isUnanswered(err) && DOWN.test(messageOf(err));
      return target.name && down ? 'unreachable' : 'not yet';
    }
  }
}
