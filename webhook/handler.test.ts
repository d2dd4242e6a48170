import { Registry } from 'prom-client';
import { loadFixture } from '../fixtures/load';
import { silentLogger, memoryLogger } from '../util/logger';
import { Answer, isHttpAnswer } from './answer';
import { AnswerMetrics } from './answer-metrics';
import { RequestContext } from './context';
import { failClosed, failOpen, Handler, handlerOf, layered, Wrapper } from './handler';
import { handleMutateModRule } from './modrule';
import { BadRequestError } from './review';
import { makeReview } from './testing';

const context = (): RequestContext =>
  new RequestContext(makeReview('CREATE', loadFixture('deployment')).request, 'dragnet', '/dragnet-webhook');

describe('layered', () => {
  it('runs the wrappers first one outermost, around the handler', async () => {
    const order: string[] = [];
    const tag =
      (name: string): Wrapper =>
      (next) =>
      async (c) => {
        order.push(`${name} in`);
        const answer = await next(c);
        order.push(`${name} out`);
        return answer;
      };
    const handler: Handler = (c) => {
      order.push('handler');
      return { response: { uid: c.request.uid, allowed: true }, result: 'allowed' };
    };
    await layered(handler, tag('outer'), tag('inner'))(context());
    expect(order).toEqual(['outer in', 'inner in', 'handler', 'inner out', 'outer out']);
  });

  it('lets a wrapper answer without calling the handler', async () => {
    const never: Handler = () => {
      throw new Error('must not be called');
    };
    const hold: Wrapper = () => () => ({ http: { status: 503, text: 'held' }, result: 'error' });
    const answer = await layered(never, hold)(context());
    expect(isHttpAnswer(answer) && answer.http.status).toBe(503);
  });
});

describe('failOpen', () => {
  it('answers a BadRequestError with its HTTP status', async () => {
    const { logger } = memoryLogger();
    const handler = failOpen(logger, new AnswerMetrics(new Registry()))(handlerOf(handleMutateModRule));
    const review = makeReview('CREATE', loadFixture('deployment'));
    delete review.request.object;
    const answer: Answer = await handler(new RequestContext(review.request, 'mutate-modrule', undefined));
    expect(answer).toMatchObject({ http: { status: 400 }, result: 'bad_request' });
    expect(isHttpAnswer(answer) && answer.http.text).toMatch(/request\.object is required/);
  });

  it('allows the request unchanged on any other failure, with a warning, a log line and a count', async () => {
    const { logger, lines } = memoryLogger();
    const registry = new Registry();
    const c = context();
    const answer = await failOpen(
      logger,
      new AnswerMetrics(registry),
    )(() => {
      throw new Error('store corrupted');
    })(c);
    expect(answer).toEqual({
      response: {
        uid: c.request.uid,
        allowed: true,
        warnings: ['modrule: internal error, request allowed unchanged: store corrupted'],
      },
      result: 'error',
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'error',
        message: 'admission handler failed; allowed unchanged',
        endpoint: 'dragnet',
        object: { kind: 'Deployment', namespace: c.request.namespace, name: c.request.name },
        operation: 'CREATE',
        uid: c.request.uid,
        error: 'store corrupted',
      }),
    ]);
    expect(await registry.metrics()).toContain(
      'modrule_webhook_fail_open_total{endpoint="dragnet",reason="handler_error"} 1',
    );
  });

  it('does not count a BadRequestError as failing open', async () => {
    const registry = new Registry();
    await failOpen(
      silentLogger(),
      new AnswerMetrics(registry),
    )(() => {
      throw new BadRequestError('too big', 413);
    })(context());
    expect(await registry.metrics()).toContain(
      'modrule_webhook_fail_open_total{endpoint="dragnet",reason="handler_error"} 0',
    );
  });
});

describe('failClosed', () => {
  it('refuses the request on a failure of our own (500, nothing stored), with a log line and a count', async () => {
    const { logger, lines } = memoryLogger();
    const registry = new Registry();
    const review = makeReview('CREATE', loadFixture('deployment'));
    const c = new RequestContext(review.request, 'mutate-modrule', undefined);
    const answer = await failClosed(
      logger,
      new AnswerMetrics(registry),
    )(() => {
      throw new Error('defaults table missing');
    })(c);
    expect(answer).toMatchObject({
      response: { uid: c.request.uid, allowed: false, status: { code: 500, reason: 'InternalError' } },
      result: 'error',
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'error',
        message: 'admission handler failed; refused',
        error: 'defaults table missing',
      }),
    ]);
    expect(await registry.metrics()).toContain(
      'modrule_webhook_fail_closed_total{endpoint="mutate-modrule",reason="handler_error"} 1',
    );
  });

  it('still answers a BadRequestError with its HTTP status', async () => {
    const answer = await failClosed(
      silentLogger(),
      new AnswerMetrics(new Registry()),
    )(() => {
      throw new BadRequestError('too big', 413);
    })(context());
    expect(answer).toMatchObject({ http: { status: 413 }, result: 'bad_request' });
  });
});
