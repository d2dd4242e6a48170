import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { Logger } from '../util/logger';
import { sendText } from './http';

export interface HealthServerOptions {
  port: number;
  host?: string;
  registry: Registry;
  /** Ready to take admission traffic (first rule load done, webhook listening, not closing). */
  isReady: () => boolean;
  logger: Logger;
}

/** Plain-HTTP probes and metrics: /healthz, /readyz, /metrics. */
export function createHealthServer(options: HealthServerOptions): Server {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendText(res, 405, `method ${req.method} not allowed`, { Allow: 'GET, HEAD' });
      return;
    }
    switch (path) {
      case '/healthz':
        sendText(res, 200, 'ok');
        return;
      case '/readyz':
        if (options.isReady()) sendText(res, 200, 'ok');
        else sendText(res, 503, 'not ready');
        return;
      case '/metrics': {
        const text = await options.registry.metrics();
        sendText(res, 200, text, { 'Content-Type': options.registry.contentType });
        return;
      }
      default:
        sendText(res, 404, `not found: ${path} (try /healthz, /readyz, /metrics)`);
    }
  };
  return createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      options.logger.error('health endpoint failed', { error: err.message, stack: err.stack });
      if (!res.headersSent) sendText(res, 500, 'internal error');
      else res.destroy();
    });
  });
}
