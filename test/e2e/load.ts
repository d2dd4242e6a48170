import { JsonObject } from '../../util/json';
import { messageOf } from '../../util/errors';
import { KubeClient } from '../../kube/kube';

/*
 * A steady stream of ConfigMap creates through several API servers, as controllers and CI jobs write while the
 * operator is rolled: each write is checked in its own answer (the object as stored, after the webhooks) for the label
 * a rule adds. A write admitted without it is unpatched (the dragnet failed open, or answered without the rule); one
 * the API server refused or that got no answer is failed.
 */

/** One write. */
export interface Write {
  /** When it was sent (ms since the epoch). */
  at: number;
  /** Through which API server (index). */
  via: number;
  outcome: 'patched' | 'unpatched' | 'failed';
  ms: number;
  error?: string;
}

/** Counts over some writes. */
export interface WriteSummary {
  writes: number;
  patched: number;
  unpatched: number;
  failed: number;
  /** Writes per second over the span they were sent in. */
  perSecond: number;
}

/** Writes ConfigMaps at a fixed rate, round-robin over the API servers it is told to use. */
export class WriteLoad {
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;
  private began = 0;
  private readonly inFlight = new Set<Promise<void>>();
  readonly writes: Write[] = [];

  constructor(
    private readonly clients: readonly KubeClient[],
    private readonly namespace: string,
    /** The label the rule adds, and its value. */
    private readonly label: readonly [string, string],
    private readonly perSecond = 20,
    private vias: readonly number[] = clients.map((_, i) => i),
  ) {}

  /** Starts writing (catching up on the rate every 10 ms, so a slow tick does not lower it). */
  start(): void {
    this.began = Date.now();
    this.timer = setInterval(() => {
      const due = Math.floor(((Date.now() - this.began) * this.perSecond) / 1000);
      while (this.sent < due) this.write(this.sent++);
    }, 10);
  }

  /** From now on, writes go through these API servers only. */
  use(vias: readonly number[]): void {
    this.vias = vias;
  }

  /** Stops sending; resolves with every write once the ones in flight are answered. */
  async stop(): Promise<Write[]> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([...this.inFlight]);
    return this.writes;
  }

  private write(n: number): void {
    const via = this.vias[n % this.vias.length];
    const at = Date.now();
    const [label, value] = this.label;
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `load-${this.began}-${n}`, namespace: this.namespace },
      data: { n: String(n) },
    };
    const done = this.clients[via]
      .request('POST', `/api/v1/namespaces/${this.namespace}/configmaps`, { body, timeoutMs: 20_000 })
      .then(
        (got) => {
          const labels = ((got.metadata as JsonObject).labels ?? {}) as JsonObject;
          const outcome = labels[label] === value ? 'patched' : 'unpatched';
          this.writes.push({ at, via, outcome, ms: Date.now() - at });
        },
        (err: unknown) =>
          void this.writes.push({ at, via, outcome: 'failed', ms: Date.now() - at, error: messageOf(err) }),
      )
      .finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
  }
}

/** The counts of the writes sent in [from, to) (ms since the epoch; default: all of them). */
export function summarize(writes: readonly Write[], from = -Infinity, to = Infinity): WriteSummary {
  const some = writes.filter((w) => w.at >= from && w.at < to);
  const count = (o: Write['outcome']) => some.filter((w) => w.outcome === o).length;
  const times = some.map((w) => w.at);
  const span = times.length > 1 ? (Math.max(...times) - Math.min(...times)) / 1000 : 0;
  return {
    writes: some.length,
    patched: count('patched'),
    unpatched: count('unpatched'),
    failed: count('failed'),
    perSecond: span > 0 ? Math.round(((some.length - 1) / span) * 10) / 10 : 0,
  };
}

/** `patched/writes patched, N unpatched, N failed, R writes/s`. */
export function describeSummary(s: WriteSummary): string {
  return `${s.patched}/${s.writes} patched, ${s.unpatched} unpatched, ${s.failed} failed, ${s.perSecond} writes/s`;
}
