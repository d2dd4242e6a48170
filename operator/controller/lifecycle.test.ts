import { Lifecycle, runnable } from './lifecycle';
import { memoryLogger } from '../../util/logger';

/** A lifecycle over parts that record their starts and stops; `failing` names a part whose start throws. */
function parts(names: string[], failing?: string) {
  const events: string[] = [];
  const { logger, lines } = memoryLogger();
  const life = new Lifecycle(logger);
  for (const name of names)
    life.add(
      name,
      runnable(
        async () => {
          if (name === failing) throw new Error(`${name} cannot start`);
          events.push(`start ${name}`);
        },
        async () => void events.push(`stop ${name}`),
      ),
    );
  return { life, events, lines };
}

describe('Lifecycle', () => {
  it('starts parts in the order they were added and stops them in reverse, once', async () => {
    const { life, events } = parts(['store', 'scope', 'webhook']);
    await life.start();
    await Promise.all([life.stop(), life.stop()]);
    expect(events).toEqual([
      'start store',
      'start scope',
      'start webhook',
      'stop webhook',
      'stop scope',
      'stop store',
    ]);
  });

  it('stops the parts already started when one cannot start, and says which', async () => {
    const { life, events, lines } = parts(['store', 'certificates', 'webhook'], 'certificates');
    await expect(life.start()).rejects.toThrow('certificates cannot start');
    expect(events).toEqual(['start store', 'stop store']);
    expect(lines.find((l) => l.message === 'cannot start')).toMatchObject({ part: 'certificates' });
  });

  it('starts nothing more once cancelled, and stops what it started', async () => {
    const controller = new AbortController();
    const { life, events } = parts(['a', 'b']);
    life.add(
      'canceller',
      runnable(
        () => controller.abort(),
        () => undefined,
      ),
    );
    life.add(
      'c',
      runnable(
        () => void events.push('start c'),
        () => undefined,
      ),
    );
    await expect(life.start(controller.signal)).rejects.toThrow('start-up cancelled');
    expect(events).toEqual(['start a', 'start b', 'stop b', 'stop a']);
  });

  it('keeps stopping the other parts when one fails to stop', async () => {
    const { logger, lines } = memoryLogger();
    const stopped: string[] = [];
    const life = new Lifecycle(logger)
      .add(
        'a',
        runnable(
          () => undefined,
          () => void stopped.push('a'),
        ),
      )
      .add(
        'b',
        runnable(
          () => undefined,
          () => {
            throw new Error('b is stuck');
          },
        ),
      );
    await life.start();
    await life.stop();
    expect(stopped).toEqual(['a']);
    expect(lines.find((l) => l.message === 'stopping failed')).toMatchObject({
      part: 'b',
      error: 'b is stuck',
    });
  });
});
