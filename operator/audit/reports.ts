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
import { KubeApiError, KubeClient } from '../../kube/kube';
import { RateLimiter } from './rate';
import { messageOf } from '../../util/errors';
import { metadataOf, annotationsOf } from '../../util/meta';

/** What one round of report writing did. */
export interface WriteSummary {
  written: number;
  unchanged: number;
  deleted: number;
  failed: number;
}

// Our reports listed per page (names are all that is kept): a page is parsed in one go on the webhook's event loop.
const REPORTS_PER_PAGE = 5;

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

  /**
   * The namespaces that have one of our reports ('' = the cluster report exists). Listed a few at a time and kept as
   * names only: a report can be half a MiB, and a thousand of them must not be held, or parsed at once.
   */
  private async existingNamespaces(): Promise<Set<string>> {
    const { client, limiter, signal } = this.options;
    const { group, version, namespaced, cluster } = this.api;
    const out = new Set<string>();
    const labelSelector = Object.entries(MANAGED_BY)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    for (const resource of [namespaced.resource, cluster.resource]) {
      let token: string | undefined;
      do {
        await limiter?.take(signal);
        const page = await client
          .request('GET', `/apis/${group}/${version}/${resource}`, {
            query: { limit: REPORTS_PER_PAGE, continue: token, labelSelector },
          })
          .catch((err: unknown) => {
            if (statusOf(err) !== 404) throw err;
            throw new Error(
              `${resource}.${group} is not served: install the report CRDs (config/reports/${this.options.format}, ` +
                `docs/audit.md) or run the operator without --reports`,
            );
          });
        const meta = metadataOf(page);
        token = typeof meta.continue === 'string' && meta.continue ? meta.continue : undefined;
        for (const r of Array.isArray(page.items) ? page.items : [])
          if (isJsonObject(r) && isJsonObject(r.metadata) && r.metadata.name === REPORT_NAME)
            out.add(nsOf(r));
      } while (token && !signal?.aborted);
    }
    return out;
  }

  /** Our report in one namespace ('' = the cluster report), or undefined. */
  private async get(namespace: string): Promise<JsonObject | undefined> {
    const { client, limiter, signal } = this.options;
    await limiter?.take(signal);
    try {
      return await client.request('GET', `${this.collection(namespace)}/${REPORT_NAME}`);
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  /**
   * Writes the builder's reports. `partial` (why the scan did not finish) is recorded on every report written, and
   * then no report is deleted: what the scan did not see is not known to be gone.
   */
  async write(builder: ReportBuilder, partial?: string): Promise<WriteSummary> {
    const { logger, signal, format } = this.options;
    const summary: WriteSummary = { written: 0, unchanged: 0, deleted: 0, failed: 0 };
    const existing = await this.existingNamespaces();
    const now = new Date();
    for (const ns of builder.namespaces()) {
      if (signal?.aborted) break;
      const previous = existing.has(ns) ? await this.get(ns) : undefined;
      const built = builder.report(format, ns, now, previous);
      if (!built) continue;
      if (partial)
        built.metadata = {
          ...metadataOf(built),
          annotations: { ...annotationsOf(built), [PARTIAL_ANNOTATION]: partial },
        };
      if (previous && sameReport(built, previous)) {
        summary.unchanged++;
        continue;
      }
      try {
        await this.put(ns, built, previous);
        summary.written++;
      } catch (err) {
        summary.failed++;
        logger.warn('writing an audit report failed', {
          namespace: ns || null,
          error: messageOf(err),
        });
      }
    }
    if (!partial) await this.deleteStale(existing, new Set(builder.namespaces()), summary);
    return summary;
  }

  /**
   * Creates the report of namespace `ns`, or replaces `previous` with its resourceVersion; on a conflict (another
   * replica wrote it meanwhile) reads it again and tries once more.
   */
  private async put(ns: string, built: JsonObject, previous: JsonObject | undefined): Promise<void> {
    const { client, limiter, signal } = this.options;
    for (let attempt = 1; ; attempt++) {
      await limiter?.take(signal);
      try {
        if (previous) {
          const meta = {
            ...metadataOf(built),
            resourceVersion: metadataOf(previous).resourceVersion,
          };
          await client.request('PUT', `${this.collection(ns)}/${REPORT_NAME}`, {
            body: { ...built, metadata: meta },
          });
        } else {
          await client.request('POST', this.collection(ns), { body: built });
        }
        return;
      } catch (err) {
        if (statusOf(err) !== 409 || attempt > 1) throw err;
        await limiter?.take(signal);
        previous = await client.request('GET', `${this.collection(ns)}/${REPORT_NAME}`);
      }
    }
  }

  /** Deletes the reports of the namespaces in `existing` that are not in `keep` (counted in `summary`). */
  private async deleteStale(existing: Set<string>, keep: Set<string>, summary: WriteSummary): Promise<void> {
    const { client, logger, limiter, signal } = this.options;
    for (const ns of existing) {
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
          error: messageOf(err),
        });
      }
    }
  }
}
