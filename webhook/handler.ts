import { Logger } from '../util/logger';
import { Answer, badRequest, failOpenResponse } from './answer';
import { AnswerMetrics } from './answer-metrics';
import { RequestContext } from './context';
import { BadRequestError } from './review';

/*
 * The webhook's seam, after controller-runtime's admission.Handler: an endpoint is a handler (one request in, one
 * answer out), and what every request goes through (our own failure answered open, the holds, fairness, logging) is
 * a wrapper layered around it.
 */

/** One admission request in, its answer out. */
export type Handler<A extends Answer = Answer> = (context: RequestContext) => A | Promise<A>;

/** Something layered around a handler: it may answer itself, or call the handler and look at its answer. */
export type Wrapper<A extends Answer = Answer> = (next: Handler<A>) => Handler<A>;

/** `handler` inside `wrappers`, the first one outermost. */
export function layered<A extends Answer>(handler: Handler<A>, ...wrappers: Array<Wrapper<A>>): Handler<A> {
  return wrappers.reduceRight<Handler<A>>((next, wrap) => wrap(next), handler);
}

/** A handler of a synchronous endpoint function of the request (the pure endpoints). */
export function handlerOf<A extends Answer>(endpoint: (request: RequestContext['request']) => A): Handler<A> {
  return (context) => endpoint(context.request);
}

/**
 * A handler's failure: a BadRequestError answers its HTTP status; anything else is our bug, which must not block the
 * cluster's writes, so the request is allowed unchanged with a warning (like KubeMod), logged and counted.
 */
export function failOpen(logger: Logger, answers: AnswerMetrics): Wrapper {
  return (next) => async (context) => {
    try {
      return await next(context);
    } catch (err) {
      if (err instanceof BadRequestError) return badRequest(err.status, err.message);
      const error = err instanceof Error ? err : new Error(String(err));
      logger.error('admission handler failed; allowed unchanged', {
        endpoint: context.endpoint,
        ...context.logFields,
        error: error.message,
        stack: error.stack,
      });
      answers.failedOpen(context.endpoint, 'handler_error');
      return { response: failOpenResponse(context.request.uid, error), result: 'error' };
    }
  };
}
