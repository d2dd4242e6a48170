// What the tests need to know about config/monitoring/dashboard.json: its queries, and how Grafana would send them.
import { isJsonObject, JsonObject, JsonValue } from '../util/json';

/**
 * Metrics the dashboard and alerts use that the code does not expose yet (none today): their queries parse but
 * return nothing, and the live-Prometheus test leaves them out. A new panel on a metric still to come goes here.
 */
export const PENDING_METRICS: ReadonlySet<string> = new Set<string>([]);

/** One query of one panel. */
export interface DashboardQuery {
  panelId: number;
  title: string;
  refId: string;
  expr: string;
  datasource: JsonValue | undefined;
}

/** Every query of every panel (rows included), in order. */
export function dashboardQueries(dashboard: JsonObject): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const visit = (panels: JsonValue | undefined) => {
    for (const p of Array.isArray(panels) ? panels : []) {
      if (!isJsonObject(p)) continue;
      for (const t of Array.isArray(p.targets) ? p.targets : [])
        if (isJsonObject(t))
          out.push({
            panelId: Number(p.id),
            title: String(p.title),
            refId: String(t.refId),
            expr: String(t.expr ?? ''),
            datasource: t.datasource,
          });
      visit(p.panels);
    }
  };
  visit(dashboard.panels);
  return out;
}

/**
 * The query as Grafana sends it: the job variable set to all (`.+`), `$__rate_interval` and `$__range` replaced by
 * the given durations.
 */
export function concreteQuery(expr: string, rateInterval: string, range: string): string {
  return expr
    .replaceAll('$__rate_interval', rateInterval)
    .replaceAll('$__range', range)
    .replaceAll('"$job"', '".+"');
}

/** The modrule metrics a query reads that are still pending (see PENDING_METRICS). */
export function pendingMetricsOf(expr: string): string[] {
  return [...PENDING_METRICS].filter((m) => expr.includes(m));
}
