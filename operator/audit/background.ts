import { Logger } from '../../util/logger';
import { messageOf } from '../../util/errors';
import { CompiledRule } from '../../rule/compile';
import { RuleStore } from '../../store/rules';
import type { ReferenceSource } from '../../store/references';
import { QuarantineCheck } from '../../engine/admit';
import { ReportBuilder, ReportFormat } from '../../audit/report';
import { sleep } from '../../kube/backoff';
import { KubeClient } from '../../kube/kube';
import { prepareScan } from './prepare';
import { RateLimiter } from './rate';
import { ReportWriter, WriteSummary } from './reports';
import { scanCluster, ScanResult } from './scan';

/** The operator's background audit (`--reports`): what it writes and how much one scan may take. */
export interface BackgroundAuditConfig {
  format: ReportFormat;
  /** A full scan this often, rules changed or not (objects change too); default 1 h. */
  intervalSeconds?: number;
  /** After a rule changes, wait this long for more changes before scanning; default 5 s. */
  debounceMs?: number;
  /** Budget of one scan: objects listed; default 100,000. */
  maxObjects?: number;
  /** Budget of one scan: duration; default 10 min. */
  maxScanSeconds?: number;
  /** Objects per list page; default 50 (a page is parsed in one go on the webhook's event loop). */
  pageSize?: number;
  /** Share of the process's time a scan may take; default DEFAULT_SHARE. */
  share?: number;
  /** Longest stretch of evaluation between two pauses; default 1 ms. */
  sliceMs?: number;
  /** Requests per second to the API server; default 20. */
  qps?: number;
}

/** One finished scan, for logs, metrics and tests. */
export interface ScanRound {
  scan: ScanResult;
  reports: WriteSummary;
  partial?: string;
  /** How long the round took, reports included. */
  ms: number;
}

export interface BackgroundAuditDeps {
  client: KubeClient;
  store: RuleStore;
  logger: Logger;
  /** Resolves once the store holds the cluster's rules (the first full sync). */
  rulesLoaded: Promise<void>;
  /** The webhook's reference caches: the audit evaluates against the same objects. */
  references?: ReferenceSource;
  /** The webhook's quarantine check now (rules it skips are reported `error`). */
  quarantined?: () => QuarantineCheck | undefined;
  onRound?: (round: ScanRound) => void;
  /** A round that failed before writing its reports, after `ms`. */
  onFailure?: (error: Error, ms: number) => void;
}

/**
 * The share of the process's time a background scan takes by default. A scan also costs what its slices do not
 * count (parsing pages, garbage collection), so the webhook's share is larger than 1 - this, and measured: see
 * docs/performance.md#background-audit.
 */
export const DEFAULT_SHARE = 0.25;

/** Seconds between full scans when the configuration names none. */
export const DEFAULT_INTERVAL_SECONDS = 3600;

// Rule versions by identity: a rule edit compiles a new CompiledRule, so the set of ids says whether rules changed.
const ids = new WeakMap<CompiledRule, number>();
let nextId = 0;
function fingerprint(rules: readonly CompiledRule[]): string {
  return rules
    .map((r) => {
      let id = ids.get(r);
      if (id === undefined) ids.set(r, (id = nextId++));
      return id;
    })
    .sort((a, b) => a - b)
    .join(',');
}

/**
 * Audits the cluster in the background and keeps the reports: after the first sync, after rules change (debounced),
 * and every interval. One scan at a time (a trigger during a scan asks for one more after it), each within its
 * budget (objects, time), listing page by page at a limited rate, giving the event loop back after every
 * millisecond of evaluation and taking a quarter of the process's time, so admissions are not held up behind it.
 */
export class BackgroundAudit {
  private readonly controller = new AbortController();
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  // Something in the store changed (rules, or Namespaces and Nodes: the rules are compared before scanning).
  private changed = false;
  private requested = false;
  private unsubscribe: (() => void) | null = null;
  private scanned = '';

  constructor(
    private readonly config: BackgroundAuditConfig,
    private readonly deps: BackgroundAuditDeps,
  ) {}

  /** Starts the loop (idempotent). */
  start(): void {
    if (this.loop) return;
    this.unsubscribe = this.deps.store.onChange(() => {
      this.changed = true;
      this.wake?.();
    });
    this.loop = this.run();
  }

  /** Stops: a running scan is cancelled between two objects. */
  async stop(): Promise<void> {
    this.controller.abort();
    this.unsubscribe?.();
    this.wake?.();
    await this.loop;
  }

  /** Asks for a scan as soon as the current one (if any) is done, rules changed or not. */
  trigger(): void {
    this.requested = true;
    this.wake?.();
  }

  private get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    await Promise.race([this.deps.rulesLoaded, new Promise((r) => signal.addEventListener('abort', r))]);
    const interval = (this.config.intervalSeconds ?? DEFAULT_INTERVAL_SECONDS) * 1000;
    let lastScan = -Infinity;
    while (!this.stopped) {
      if (this.requested || Date.now() - lastScan >= interval || this.rulesChanged()) {
        this.requested = false;
        lastScan = Date.now();
        await this.round();
        continue;
      }
      // Sleep until the interval is up or something changed; then let a burst of changes settle.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, lastScan + interval - Date.now()));
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        this.wake = done;
        if (this.changed || this.requested || this.stopped) done();
      });
      this.wake = null;
      if (this.changed || this.requested) await sleep(this.config.debounceMs ?? 5000, signal);
      this.changed = false;
    }
  }

  private rulesChanged(): boolean {
    return fingerprint(this.deps.store.allRules()) !== this.scanned;
  }

  private async round(): Promise<void> {
    const { client, store, logger } = this.deps;
    const signal = this.controller.signal;
    const started = Date.now();
    this.scanned = fingerprint(store.allRules());
    const limiter = new RateLimiter(this.config.qps ?? 20);
    try {
      const snapshot = store.snapshot();
      const prepared = await prepareScan(client, snapshot, { limiter, signal });
      const builder = new ReportBuilder();
      const scan = await scanCluster(
        {
          client,
          snapshot,
          plan: prepared.plan,
          scope: prepared.scope,
          pageSize: this.config.pageSize ?? 50,
          limiter,
          maxObjects: this.config.maxObjects ?? 100_000,
          deadline: started + (this.config.maxScanSeconds ?? 600) * 1000,
          signal,
          sliceMs: this.config.sliceMs ?? 1,
          share: this.config.share ?? DEFAULT_SHARE,
          references: this.deps.references,
          quarantined: this.deps.quarantined,
        },
        (audit) => builder.add(audit),
      );
      if (this.stopped) return;
      const problems = [...prepared.problems, ...scan.problems];
      const partial =
        scan.stopped ??
        (problems.length > 0
          ? problems
              .map((p) => p.message)
              .join('; ')
              .slice(0, 1000)
          : undefined);
      const reports = await new ReportWriter({
        client,
        format: this.config.format,
        logger,
        limiter,
        signal,
      }).write(builder, partial);
      logger.info('background audit done', {
        ms: Date.now() - started,
        listed: scan.listed,
        audited: scan.evaluated,
        verdicts: scan.verdicts,
        reports,
        ...(partial ? { partial } : {}),
        ...(prepared.notes.length ? { notes: prepared.notes } : {}),
      });
      this.deps.onRound?.({ scan, reports, partial, ms: Date.now() - started });
    } catch (err) {
      if (this.stopped) return;
      logger.warn('background audit failed; retrying at the next change or interval', {
        error: messageOf(err),
      });
      this.deps.onFailure?.(err instanceof Error ? err : new Error(messageOf(err)), Date.now() - started);
    }
  }
}
