import { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { Logger } from '../util/logger';
import { messageOf } from '../util/errors';
import { TLS_MIN_VERSION, TlsSource } from './tls';

/** Slow-client limits of the HTTPS server, as documented: headers within 30 s, the whole request within 60 s. */
export const HTTP_TIMEOUTS = { headersMs: 30_000, requestMs: 60_000, keepAliveMs: 65_000 } as const;

// Timeouts fire at most this late: 1/30 of the headers timeout (1 s for the default 30 s), at least 10 ms.
function checkingInterval(headersTimeoutMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(headersTimeoutMs / 30)));
}

/** The HTTPS server of the webhook, with its slow-client limits, following `tls` as the certificate is renewed. */
export function createAdmissionServer(
  tls: TlsSource,
  timeouts: { headersMs: number; requestMs: number },
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  logger: Logger,
): { server: HttpsServer; unsubscribeTls: () => void } {
  const server = createHttpsServer(
    {
      ...tls.current(),
      minVersion: TLS_MIN_VERSION,
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      // Node checks both timeouts only this often (default 30 s: a 30 s limit then fires at up to 60 s).
      connectionsCheckingInterval: checkingInterval(timeouts.headersMs),
    },
    listener,
  );
  server.keepAliveTimeout = HTTP_TIMEOUTS.keepAliveMs;
  server.on('tlsClientError', (err: Error) => logger.debug('TLS handshake failed', { error: err.message }));
  const unsubscribeTls = tls.subscribe((material) => {
    try {
      server.setSecureContext({ ...material, minVersion: TLS_MIN_VERSION });
      logger.info('serving certificate swapped');
    } catch (err) {
      logger.error('cannot use the new serving certificate; keeping the old one', { error: messageOf(err) });
    }
  });
  return { server, unsubscribeTls };
}

/** The server's limits in force (ms): headers, whole request, and how often Node checks them. */
export function timeoutsOf(server: HttpsServer): {
  headersMs: number;
  requestMs: number;
  checkingIntervalMs: number;
} {
  return {
    headersMs: server.headersTimeout,
    requestMs: server.requestTimeout,
    checkingIntervalMs: (server as unknown as { connectionsCheckingInterval: number })
      .connectionsCheckingInterval,
  };
}

/** The host part of a URL to reach a server listening on `host`. */
export function urlHost(host: string | undefined): string {
  if (!host || host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** Listens on port and host; resolves with the port bound. */
export function listen(
  server: HttpServer | HttpsServer,
  port: number,
  host: string | undefined,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops accepting connections, closes idle ones, and cuts the rest after timeoutMs. */
export function closeServer(server: HttpServer | HttpsServer, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
