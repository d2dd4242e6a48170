import { Logger } from '../util/logger';
import { Answer, badRequest, failOpenResponse } from './answer';
import { denyResponse } from './review';
import { errorOf } from '../util/errors';
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
 * The shape both failure wrappers share: a BadRequestError answers its HTTP status; anything else is our bug, logged
 * (`what` says what happened to the request) and answered by `answer`.
 */
function onHandlerError(
  logger: Logger,
  what: string,
  answer: (context: RequestContext, error: Error) => Answer,
): Wrapper {
  return (next) => async (context) => {
    try {
      return await next(context);
    } catch (err) {
      if (err instanceof BadRequestError) return badRequest(err.status, err.message);
      const error = errorOf(err);
      logger.error(`admission handler failed; ${what}`, {
        endpoint: context.endpoint,
        ...context.logFields,
        error: error.message,
        stack: error.stack,
      });
      return answer(context, error);
    }
  };
}

/**
 * A handler's failure: a BadRequestError answers its HTTP status; anything else is our bug, which must not block the
 * cluster's writes, so the request is allowed unchanged with a warning (like KubeMod), logged and counted.
 */
export function failOpen(logger: Logger, answers: AnswerMetrics): Wrapper {
  return onHandlerError(logger, 'allowed unchanged', (context, error) => {
    answers.failedOpen(context.endpoint, 'handler_error');
    return { response: failOpenResponse(context.request.uid, error), result: 'error' };
  });
}

/**
 * A handler's failure on an endpoint that fails closed (the ModRule webhooks, failurePolicy Fail): a BadRequestError
 * answers its HTTP status; anything else is our bug, and the write is refused (500, nothing stored), logged and
 * counted: a ModRule that could not be validated or put in force must not be stored as if it were.
 */
export function failClosed(logger: Logger, answers: AnswerMetrics): Wrapper {
  return onHandlerError(logger, 'refused', (context, error) => {
    answers.failedClosed(context.endpoint, 'handler_error');
    const { kind, namespace, name } = context.logFields.object;
    const what = `${kind} ${namespace ? `${namespace}/` : ''}${name ?? ''}`;
    const message =
      `${what} was not admitted: modrule failed while admitting it (${error.message}); nothing was stored: ` +
      "retry, and see the operator's log if it persists";
    return { response: denyResponse(context.request.uid, 500, 'InternalError', message), result: 'error' };
  });
}
