import { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from '../util/logger';
import { AdmissionApiVersion } from './admission';
import { Answer, badRequest, isHttpAnswer, sendAnswer } from './answer';
import { AnswerMetrics } from './answer-metrics';
import { RequestContext } from './context';
import { Route } from './endpoints';
import { Handler } from './handler';
import { isJsonContentType, readBody, sendText } from './http';
import { RequestMetrics } from './metrics';
import { handlePeerNotice, PEER_PATH, PeerReceiver } from './peer';
import { BadRequestError, parseAdmissionReview, ParsedReview } from './review';

/** What the HTTPS server's listener needs. */
export interface DispatchOptions {
  routes: ReadonlyMap<string, Route<Handler>>;
  logger: Logger;
  metrics: RequestMetrics;
  answers: AnswerMetrics;
  maxBodyBytes: number;
  peer?: PeerReceiver;
  /** True once the server is closing: answers then close their connection. */
  closing: () => boolean;
}

/**
 * The HTTPS server's request listener: a request is routed by its path to its endpoint's handler, read and checked
 * (4xx with the reason when it is not an AdmissionReview POST), handed to the handler with its context, and answered;
 * every answer is counted and timed. A failure of the listener itself answers 500.
 */
export function admissionListener(
  options: DispatchOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger } = options;
  const serve = instrumented(options);
  return (req, res) => {
    serve(req, res).catch((err: Error) => {
      logger.error('webhook request failed', { error: err.message, stack: err.stack });
      if (!res.headersSent) sendText(res, 500, 'internal error');
      else res.destroy();
    });
  };
}

function instrumented(
  options: DispatchOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { routes, logger, metrics } = options;
  const endpointList = [...routes.keys()].join(', ');
  return async (req, res) => {
    const started = process.hrtime.bigint();
    const path = (req.url ?? '/').split('?')[0];
    const route = routes.get(path);
    let operation = '';
    const finish = (answer: Answer, apiVersion?: AdmissionApiVersion): void => {
      if (isHttpAnswer(answer) && answer.result === 'bad_request') {
        const { status, text } = answer.http;
        logger.warn('bad admission request', { path, method: req.method, status, reason: text });
      }
      if (options.closing()) res.setHeader('Connection', 'close');
      sendAnswer(res, answer, apiVersion);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.observe(route?.endpoint ?? 'unknown', operation, answer.result, seconds);
      if (logger.isDebugEnabled()) {
        const result = answer.result;
        logger.debug('admission request', { path, operation, result, ms: Math.round(seconds * 1e6) / 1e3 });
      }
    };
    const refuse = (answer: Answer): void => {
      finish(answer);
      req.resume();
    };

    if (path === PEER_PATH && options.peer && req.method === 'POST')
      return handlePeerNotice(req, res, options.peer);
    if (!route) return refuse(badRequest(404, `not found: ${path} (endpoints: ${endpointList})`));
    if (req.method !== 'POST') {
      return refuse(
        badRequest(405, `method ${req.method} not allowed; admission reviews are POSTed`, { Allow: 'POST' }),
      );
    }
    const contentType = req.headers['content-type'];
    if (!isJsonContentType(contentType)) {
      return refuse(badRequest(415, `content type must be application/json, got ${contentType ?? 'none'}`));
    }
    let review: ParsedReview;
    try {
      review = parseAdmissionReview(await readBody(req, options.maxBodyBytes));
    } catch (err) {
      if (err instanceof BadRequestError) return finish(badRequest(err.status, err.message));
      throw err;
    }
    operation = review.request.operation;
    options.answers.called(route.endpoint, req.url);
    const context = new RequestContext(review.request, route.endpoint, req.url);
    finish(await route.handler(context), review.apiVersion);
  };
}
