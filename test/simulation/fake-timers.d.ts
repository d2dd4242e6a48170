// The part of @sinonjs/fake-timers (10.x, pinned in package.json) the simulation uses; the package ships no types.
declare module '@sinonjs/fake-timers' {
  type Faked =
    | 'Date'
    | 'setTimeout'
    | 'clearTimeout'
    | 'setInterval'
    | 'clearInterval'
    | 'setImmediate'
    | 'clearImmediate'
    | 'performance'
    | 'hrtime'
    | 'nextTick'
    | 'queueMicrotask';

  /** A clock installed in place of the global timers. */
  export interface InstalledClock {
    now: number;
    /** Runs the first timer due (advancing the clock to it); returns the time then. */
    next(): number;
    countTimers(): number;
    uninstall(): void;
  }

  interface Install {
    install(options?: { now?: number; toFake?: Faked[]; shouldAdvanceTime?: boolean }): InstalledClock;
  }

  const FakeTimers: { withGlobal(global: object): Install };
  export default FakeTimers;
}
