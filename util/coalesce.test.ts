import { Debouncer, SingleFlight } from './coalesce';

describe('Debouncer', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('fires once after the triggers have been quiet', () => {
    let fired = 0;
    const d = new Debouncer(() => fired++, { quietMs: 100 });
    d.trigger();
    jest.advanceTimersByTime(60);
    d.trigger();
    jest.advanceTimersByTime(60);
    expect(fired).toBe(0);
    jest.advanceTimersByTime(40);
    expect(fired).toBe(1);
  });

  it('fires no later than maxDelayMs after the first trigger of a stream', () => {
    let fired = 0;
    const d = new Debouncer(() => fired++, { quietMs: 100, maxDelayMs: 250 });
    for (let t = 0; t < 240; t += 60) {
      d.trigger();
      jest.advanceTimersByTime(60);
    }
    expect(fired).toBe(0);
    jest.advanceTimersByTime(10);
    expect(fired).toBe(1);
  });

  it('takes a quiet time per trigger, and cancel drops what is pending', () => {
    let fired = 0;
    const d = new Debouncer(() => fired++, { quietMs: 500 });
    d.trigger(0);
    jest.advanceTimersByTime(0);
    expect(fired).toBe(1);
    d.trigger();
    d.cancel();
    jest.advanceTimersByTime(1000);
    expect(fired).toBe(1);
  });
});

describe('SingleFlight', () => {
  it('runs one at a time and once more after, however often it was asked meanwhile', async () => {
    let runs = 0;
    let concurrent = 0;
    let most = 0;
    let release: () => void = () => undefined;
    const flight = new SingleFlight(async () => {
      runs++;
      concurrent++;
      most = Math.max(most, concurrent);
      await new Promise<void>((r) => (release = r));
      concurrent--;
    });
    flight.run();
    flight.run();
    flight.run();
    release();
    await new Promise((r) => setImmediate(r));
    release();
    await flight.idle();
    expect(runs).toBe(2);
    expect(most).toBe(1);
  });

  it('runs again when the task asks, until stopped', async () => {
    let runs = 0;
    let stopped = false;
    const flight = new SingleFlight(
      async () => {
        runs++;
        if (runs === 3) stopped = true;
        flight.again();
      },
      () => stopped,
    );
    flight.run();
    await flight.idle();
    expect(runs).toBe(3);
  });
});
