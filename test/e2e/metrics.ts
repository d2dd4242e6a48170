import { randomBytes } from 'node:crypto';
import { KubeClient } from '../../kube/kube';

/** kube-apiserver's /metrics (Prometheus text). */
export async function scrape(cp: {
  get(path: string): Promise<{ status: number; body: string }>;
}): Promise<string> {
  const { status, body } = await cp.get('/metrics');
  if (status !== 200) throw new Error(`GET /metrics: ${status}`);
  return body;
}

/**
 * The sum of a counter over every series labelled name="<webhook>": by default the API server's count of calls it
 * made to that webhook (apiserver_admission_webhook_request_total, one per call whatever the answer).
 */
export function webhookCalls(
  text: string,
  webhook: string,
  metric = 'apiserver_admission_webhook_request_total',
): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labels = line.slice(metric.length + 1, line.lastIndexOf('}'));
    if (!labels.split(',').includes(`name="${webhook}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** A counter or histogram _sum/_count over the series whose labels include all of `match` (k="v" strings). */
export function metricSum(text: string, metric: string, match: readonly string[]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labels = line.slice(metric.length + 1, line.lastIndexOf('}')).split(',');
    if (match.every((m) => labels.includes(m))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Creates `count` ConfigMaps in `namespace`, `concurrency` at a time; returns each write's latency in ms. */
export async function writeConfigMaps(
  client: KubeClient,
  namespace: string,
  count: number,
  concurrency: number,
): Promise<number[]> {
  const latencies: number[] = [];
  const prefix = `cm-${randomBytes(3).toString('hex')}`;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const start = process.hrtime.bigint();
        await client.request('POST', `/api/v1/namespaces/${namespace}/configmaps`, {
          body: {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `${prefix}-${i}` },
            data: { n: String(i) },
          },
        });
        latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }),
  );
  return latencies;
}

/** The p-th percentile (nearest rank), rounded to 0.1 ms. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[at] ?? 0) * 10) / 10;
}
