import autocannon from 'autocannon';

/** One load point: a closed loop of POSTs of one body from `connections` clients. */
export interface Point {
  requests: number;
  rps: number;
  /** Milliseconds (autocannon records whole ones). */
  p50: number;
  p99: number;
  max: number;
  /** Little's law for a closed loop: finer than autocannon's whole milliseconds. */
  mean: number;
  /** Non-2xx answers, errors and timeouts. */
  bad: number;
}

/** How a load point departs from a closed loop with autocannon's default timeout. */
export interface LoadOptions {
  /** Answers slower than this count as timeouts. */
  timeoutSeconds?: number;
  /** An open loop of this many requests per second over the connections instead of a closed loop. */
  rate?: number;
}

/**
 * POSTs `body` (an AdmissionReview; several: each connection sends them in turn) to `url` for `seconds` from
 * `connections` clients, as a closed loop unless `options` says otherwise.
 */
export async function load(
  url: string,
  body: string | readonly string[],
  connections: number,
  seconds: number,
  options: LoadOptions = {},
): Promise<Point> {
  const { timeoutSeconds, rate } = options;
  const r = await autocannon({
    url,
    method: 'POST',
    ...(typeof body === 'string' ? { body } : { requests: body.map((b) => ({ method: 'POST', body: b })) }),
    headers: { 'Content-Type': 'application/json' },
    connections,
    duration: seconds,
    ...(timeoutSeconds === undefined ? {} : { timeout: timeoutSeconds }),
    ...(rate === undefined ? {} : { overallRate: rate }),
  });
  return {
    requests: r.requests.total,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    mean: rate === undefined ? (connections / r.requests.average) * 1000 : r.latency.mean,
    bad: r.non2xx + r.errors + r.timeouts,
  };
}
