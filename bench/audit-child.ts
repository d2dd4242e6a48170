import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { generateCertificates } from '../webhook/certs';
import { startWebhookServer, WEBHOOK_PATHS } from '../webhook/server';
import { MemoryTlsSource } from '../webhook/tls';
import { createKubeClient } from '../kube/kube';
import { BackgroundAudit } from '../operator/audit/background';
import { realisticRules, workloadNamespaces } from './workloads';

/*
 * The operator's two jobs in one process, as in a pod: the webhook (the realistic rules) and the background audit
 * against the list server of bench/audit.bench.ts (API_SERVER). Forked with an IPC channel: sends {url} when it
 * serves, runs a scan on 'scan' and answers {round}, answers 'memory' with the peak RSS and heap seen
 * since the previous 'memory', exits on 'stop'.
 */

async function main(): Promise<void> {
  const logger = createLogger('warn');
  const store = new RuleStore({ keepSource: false });
  store.replaceRules(realisticRules());
  store.replaceNamespaces(workloadNamespaces());
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  const webhook = await startWebhookServer(
    {
      tls: new MemoryTlsSource({ cert: certs.cert, key: certs.key }),
      port: 0,
      host: '127.0.0.1',
      healthPort: 0,
      logger,
      isReady: () => true,
    },
    { store },
  );
  const client = createKubeClient({ server: String(process.env.API_SERVER), apply: async () => undefined });
  let peak = { rss: 0, heapUsed: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    peak = { rss: Math.max(peak.rss, m.rss), heapUsed: Math.max(peak.heapUsed, m.heapUsed) };
  };
  setInterval(sample, 50).unref();
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const delayOf = () => ({
    p50: loopDelay.percentile(50) / 1e6,
    p99: loopDelay.percentile(99) / 1e6,
    max: loopDelay.max / 1e6,
  });
  // The first 'scan' lets the audit start (its first round), later ones trigger a round each.
  let begin: () => void = () => undefined;
  const started = new Promise<void>((r) => (begin = r));
  let first = true;
  const audit = new BackgroundAudit(
    {
      format: 'openreports',
      intervalSeconds: 1e6,
      debounceMs: 0,
      qps: 10_000,
      maxObjects: 1e6,
      // The operator's defaults unless the bench asks otherwise.
      ...(process.env.AUDIT_SHARE ? { share: Number(process.env.AUDIT_SHARE) } : {}),
    },
    {
      client,
      store,
      logger,
      rulesLoaded: started,
      onRound: (round) => {
        const delay = {
          p50: loopDelay.percentile(50) / 1e6,
          p99: loopDelay.percentile(99) / 1e6,
          max: loopDelay.max / 1e6,
        };
        process.send?.({
          round: { ms: round.scan.elapsedMs, listed: round.scan.listed, partial: round.partial, delay },
        });
      },
    },
  );
  audit.start();
  process.send?.({ url: webhook.url + WEBHOOK_PATHS.dragnet });
  process.on('message', (m) => {
    if (m === 'scan' && first) {
      first = false;
      begin();
    } else if (m === 'scan') audit.trigger();
    // The event loop's delay is measured per scan: what an admission arriving meanwhile waits for.
    if (m === 'scan') loopDelay.reset();
    else if (typeof m === 'object' && m !== null && 'idleMs' in m) {
      // The same measure with nothing running: the machine's own share of the delay.
      loopDelay.reset();
      setTimeout(() => process.send?.({ idle: delayOf() }), Number((m as { idleMs: number }).idleMs));
    } else if (m === 'memory') {
      sample();
      (globalThis as { gc?: () => void }).gc?.();
      process.send?.({ memory: { ...peak, after: process.memoryUsage() } });
      peak = { rss: 0, heapUsed: 0 };
    } else void audit.stop().then(() => process.exit(0));
  });
}

if (require.main === module && process.send) {
  main().catch((err: Error) => {
    process.send?.({ error: err.message });
    process.exit(1);
  });
}
