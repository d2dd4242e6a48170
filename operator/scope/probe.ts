import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { probeEvent, probeSeen, probeTokenIn } from '../../scope/probe';
import { sleep } from '../../kube/backoff';
import { isTransient, KubeClient } from '../../kube/kube';
import { LiveScopeView } from './live';

export interface ScopeProbeOptions {
  client: KubeClient;
  logger: Logger;
  live: LiveScopeView;
  /** Where the probe Events are created (dry run): the operator's own namespace. */
  namespace: string;
  /** A registration in place this long counts as in force without a probe; default 1 s. */
  settleMs?: number;
  now?: () => number;
}

/**
 * Tells whether the API server uses the live dragnet registration (scope/probe.ts): a registration this replica
 * confirmed before, or one in place for settleMs, is; else a dry-run probe Event must come back marked with its
 * token. A registration that cannot be probed (no probe entry, or written by someone else) counts once settled.
 */
export class ScopeProbe {
  private readonly confirmed = new Set<string>();
  private forbidden = false;

  constructor(private readonly options: ScopeProbeOptions) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /**
   * Resolves true once the API server uses the live registration, false at `by`, or as soon as `stillLive()` says the
   * registration the caller relies on is no longer live (it then decides again).
   */
  async confirm(stillLive: () => boolean, by: number): Promise<boolean> {
    const { live } = this.options;
    const settleMs = this.options.settleMs ?? 1000;
    for (let step = 5; ; step = Math.min(step * 2, 100)) {
      if (!stillLive()) return false;
      const hash = live.currentHash;
      if (hash === null || this.confirmed.has(hash)) return true;
      if (this.now() - live.changedSince >= settleMs) return this.remember(hash);
      const token = probeTokenIn(live.configuration);
      if (token === hash && !this.forbidden && (await this.probe(token))) return this.remember(hash);
      const left = by - this.now();
      if (left <= 0) return false;
      await sleep(Math.min(step, left));
    }
  }

  private remember(hash: string): boolean {
    if (this.confirmed.size >= 256) this.confirmed.clear();
    this.confirmed.add(hash);
    return true;
  }

  /** One dry-run probe: whether this API server called the probe webhook of the registration with `token`. */
  private async probe(token: string): Promise<boolean> {
    const { namespace } = this.options;
    try {
      const created = await this.options.client.request(
        'POST',
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        { body: probeEvent(namespace, token), query: { dryRun: 'All' } },
      );
      return probeSeen(created, token);
    } catch (err) {
      if (!isTransient(err)) {
        // Not allowed to create Events here: the settle time is all there is.
        this.forbidden = true;
        this.options.logger.warn('cannot probe the dragnet registration; relying on its settle time', {
          namespace,
          error: messageOf(err),
        });
      }
      return false;
    }
  }
}
