import { isJsonObject, JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import {
  MANAGED_BY,
  PARTIAL_ANNOTATION,
  REPORT_APIS,
  REPORT_NAME,
  ReportBuilder,
  ReportFormat,
  sameReport,
} from '../../audit/report';
import { KubeApiError, KubeClient } from '../kube';
import { listAll } from './prepare';
import { RateLimiter } from './rate';

/** What one round of report writing did. */
export interface WriteSummary {
  written: number;
  unchanged: number;
  deleted: number;
  failed: number;
}

const statusOf = (err: unknown) => (err instanceof KubeApiError ? err.status : 0);
const nsOf = (r: JsonObject) =>
  isJsonObject(r.metadata) && typeof r.metadata.namespace === 'string' ? r.metadata.namespace : '';

/**
 * Keeps the reports in the cluster in line with the latest scan: one per namespace with results and one cluster
 * report, all named modrule-audit and labelled app.kubernetes.io/managed-by=modrule. A report is written only when
 * what it says changed (timestamps of unchanged results are kept), replaced with its resourceVersion (a conflict
 * is read again once), and deleted once its namespace has nothing to report, but only after a complete scan.
 */
export class ReportWriter {
  constructor(
    private readonly options: {
      client: KubeClient;
      format: ReportFormat;
      logger: Logger;
      limiter?: RateLimiter;
      signal?: AbortSignal;
    },
  ) {}

  private get api() {
    return REPORT_APIS[this.options.format];
  }

  private collection(namespace: string): string {
    const { group, version, namespaced, cluster } = this.api;
    return namespace
      ? `/apis/${group}/${version}/namespaces/${encodeURIComponent(namespace)}/${namespaced.resource}`
      : `/apis/${group}/${version}/${cluster.resource}`;
  }

  /** Our reports in the cluster, by namespace ('' = the cluster report). */
  private async existing(): Promise<Map<string, JsonObject>> {
    const { client, limiter, signal } = this.options;
    const { group, version, namespaced } = this.api;
    const out = new Map<string, JsonObject>();
    const selector = Object.entries(MANAGED_BY)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const list = await listAll(
      client,
      `/apis/${group}/${version}/${namespaced.resource}`,
      { apiVersion: `${group}/${version}`, kind: namespaced.kind },
      { limiter, signal, labelSelector: selector },
    );
    for (const r of list)
      if (isJsonObject(r.metadata) && r.metadata.name === REPORT_NAME) out.set(nsOf(r), r);
    try {
      await limiter?.take(signal);
      out.set('', await client.request('GET', `${this.collection('')}/${REPORT_NAME}`));
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    return out;
  }

  /**
   * Writes the builder's reports. `partial` (why the scan did not finish) is recorded on every report written, and
   * then no report is deleted: what the scan did not see is not known to be gone.
   */
  async write(builder: ReportBuilder, partial?: string): Promise<WriteSummary> {
    const { client, logger, limiter, signal, format } = this.options;
    const summary: WriteSummary = { written: 0, unchanged: 0, deleted: 0, failed: 0 };
    const existing = await this.existing();
    const now = new Date();
    for (const ns of builder.namespaces()) {
      if (signal?.aborted) break;
      let previous = existing.get(ns);
      const built = builder.report(format, ns, now, previous);
      if (!built) continue;
      if (partial)
        (built.metadata as JsonObject).annotations = {
          ...((built.metadata as JsonObject).annotations as JsonObject | undefined),
          [PARTIAL_ANNOTATION]: partial,
        };
      if (previous && sameReport(built, previous)) {
        summary.unchanged++;
        continue;
      }
      try {
        for (let attempt = 1; ; attempt++) {
          await limiter?.take(signal);
          try {
            if (previous) {
              const meta = {
                ...(built.metadata as JsonObject),
                resourceVersion: (previous.metadata as JsonObject).resourceVersion,
              };
              await client.request('PUT', `${this.collection(ns)}/${REPORT_NAME}`, {
                body: { ...built, metadata: meta },
              });
            } else {
              await client.request('POST', this.collection(ns), { body: built });
            }
            summary.written++;
            break;
          } catch (err) {
            // Another replica wrote it meanwhile: read it and try once more.
            if (statusOf(err) !== 409 || attempt > 1) throw err;
            await limiter?.take(signal);
            previous = await client.request('GET', `${this.collection(ns)}/${REPORT_NAME}`);
          }
        }
      } catch (err) {
        summary.failed++;
        logger.warn('writing an audit report failed', {
          namespace: ns || null,
          error: (err as Error).message,
        });
      }
    }
    if (partial) return summary;
    const keep = new Set(builder.namespaces());
    for (const ns of existing.keys()) {
      if (keep.has(ns) || signal?.aborted) continue;
      try {
        await limiter?.take(signal);
        await client.request('DELETE', `${this.collection(ns)}/${REPORT_NAME}`);
        summary.deleted++;
      } catch (err) {
        if (statusOf(err) === 404) continue;
        summary.failed++;
        logger.warn('deleting an audit report failed', {
          namespace: ns || null,
          error: (err as Error).message,
        });
      }
    }
    return summary;
  }
}
