import { Counter, Gauge, Registry } from 'prom-client';
import { ObjectVerdict } from '../../audit/types';
import { ScanRound } from './background';

const VERDICTS: readonly ObjectVerdict[] = ['patch', 'reject', 'error', 'pass'];

/**
 * The background audit's metrics: scans by result, when the reports were last brought up to date, whether they are
 * partial, what the last scan found, and the configured interval (so a staleness alert follows the configuration).
 */
export class AuditMetrics {
  private readonly scans: Counter<'result'>;
  private readonly writes: Counter<'result'>;
  private readonly lastScan: Gauge;
  private readonly partial: Gauge;
  private readonly duration: Gauge;
  private readonly objects: Gauge<'verdict'>;

  constructor(
    registry: Registry,
    intervalSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.scans = new Counter({
      name: 'modrule_audit_scans_total',
      help: 'Background audit scans, by result (complete|partial|failed: nothing written).',
      labelNames: ['result'],
      registers: [registry],
    });
    for (const result of ['complete', 'partial', 'failed']) this.scans.inc({ result }, 0);
    this.writes = new Counter({
      name: 'modrule_audit_report_writes_total',
      help: 'Report writes of the background audit, by result (written|unchanged|deleted|failed).',
      labelNames: ['result'],
      registers: [registry],
    });
    for (const result of ['written', 'unchanged', 'deleted', 'failed']) this.writes.inc({ result }, 0);
    this.lastScan = new Gauge({
      name: 'modrule_audit_last_scan_timestamp_seconds',
      help:
        'When a background scan last finished with every report written (Unix time); before the first, when the ' +
        'audit started.',
      registers: [registry],
    });
    this.lastScan.set(now() / 1000);
    this.partial = new Gauge({
      name: 'modrule_audit_reports_partial',
      help: '1 while the reports of the last scan are partial (a list failed or a budget ran out), else 0.',
      registers: [registry],
    });
    this.partial.set(0);
    this.duration = new Gauge({
      name: 'modrule_audit_last_scan_duration_seconds',
      help: 'How long the last background scan took, reports included.',
      registers: [registry],
    });
    this.objects = new Gauge({
      name: 'modrule_audit_objects',
      help: 'Objects the last background scan audited, by verdict (patch|reject|error|pass).',
      labelNames: ['verdict'],
      registers: [registry],
    });
    new Gauge({
      name: 'modrule_audit_interval_seconds',
      help: 'Seconds between full background scans (--reports-interval).',
      registers: [registry],
    }).set(intervalSeconds);
  }

  /** Records a scan that wrote its reports (partial or not). */
  round(round: ScanRound): void {
    const { scan, reports, partial, ms } = round;
    this.scans.inc({ result: partial ? 'partial' : 'complete' });
    this.writes.inc({ result: 'written' }, reports.written);
    this.writes.inc({ result: 'unchanged' }, reports.unchanged);
    this.writes.inc({ result: 'deleted' }, reports.deleted);
    this.writes.inc({ result: 'failed' }, reports.failed);
    this.partial.set(partial ? 1 : 0);
    this.duration.set(ms / 1000);
    for (const verdict of VERDICTS) this.objects.set({ verdict }, scan.verdicts[verdict] ?? 0);
    // A report that could not be written is as stale as one never scanned.
    if (reports.failed === 0) this.lastScan.set(this.now() / 1000);
  }

  /** Records a scan that failed before writing anything. */
  failed(ms: number): void {
    this.scans.inc({ result: 'failed' });
    this.duration.set(ms / 1000);
  }
}
