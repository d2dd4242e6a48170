import { ApiServerFaults } from './apiserver';
import { Random } from './random';

/** The kinds of trouble a run may bring; each can be left out (`--faults`) to tell which one a failure needs. */
export const FAULTS = [
  /** Several API servers (a rule and its objects written through different ones). */
  'servers',
  /** API servers that load a new configuration more than a second after it was stored. */
  'slow-load',
  /** API server restarts (watches end; sometimes relists answered 410 Gone). */
  'api-restart',
  /** Configuration writes answered 409 or 422, requests answered 503. */
  'errors',
  /** API servers refusing the probe Events (403) for a while. */
  'probe-refusal',
  /** Replica restarts (drained, then started again, possibly on another API server). */
  'replica-restart',
  /** Peer notices lost. */
  'lost-notices',
  /** The serving certificate rotated: replicas load the new key at different times (notices refused meanwhile). */
  'rotation',
  /** Replica clocks 40 s ahead of or behind the others (the stamps' times are read on another clock). */
  'clock-skew',
] as const;
export type Fault = (typeof FAULTS)[number];

export interface ServerScenario {
  cacheLag: [number, number];
  loadLag: [number, number];
  faults: ApiServerFaults;
}

/** One run's world and its users, drawn from the seed. */
export interface Scenario {
  seed: number;
  faults: ReadonlySet<Fault>;
  servers: ServerScenario[];
  replicas: number;
  users: number;
  /** The rule names the users share (few: they edit and delete each other's rules). */
  ruleNames: string[];
  /** How long the users act; then the world settles. */
  activeMs: number;
  settleMs: number;
  lostNotices: number;
  /** Each replica's clock against the world's (ms; empty: all agree). */
  clockSkewMs: number[];
  /** Fault events: at (ms from the start), what. */
  events: Array<{
    at: number;
    what: 'api-restart' | 'replica-restart' | 'rotation' | 'probe-refusal';
    target: number;
  }>;
}

/** The scenario of `seed` with the faults allowed. */
export function scenarioOf(
  seed: number,
  faults: ReadonlySet<Fault>,
  random: Random,
  short = false,
): Scenario {
  const has = (f: Fault) => faults.has(f);
  const servers = Array.from({ length: has('servers') ? random.between(1, 3) : 1 }, () => {
    const slow = has('slow-load') && random.chance(0.5);
    return {
      cacheLag: [1, random.between(5, 150)] as [number, number],
      loadLag: [random.between(0, 50), slow ? random.between(1000, 2500) : random.between(50, 600)] as [
        number,
        number,
      ],
      faults: has('errors')
        ? {
            conflict: random.next() * 0.15,
            invalid: random.chance(0.2) ? 0.05 : 0,
            transient: random.next() * 0.03,
          }
        : { conflict: 0, invalid: 0, transient: 0 },
    };
  });
  const activeMs = short ? random.between(1500, 3000) : random.between(3000, 8000);
  const events: Scenario['events'] = [];
  const add = (what: Scenario['events'][number]['what'], count: number, targets: number) => {
    for (let i = 0; i < count; i++)
      events.push({ at: random.between(500, activeMs), what, target: random.int(targets) });
  };
  const replicas = random.between(1, 3);
  if (has('api-restart')) add('api-restart', random.between(0, 2), servers.length);
  if (has('replica-restart')) add('replica-restart', random.between(0, 2), replicas);
  if (has('rotation') && replicas > 1) add('rotation', random.between(0, 1), 1);
  if (has('probe-refusal')) add('probe-refusal', random.between(0, 1), servers.length);
  events.sort((a, b) => a.at - b.at);
  return {
    seed,
    faults,
    servers,
    replicas,
    users: random.between(1, 3),
    ruleNames: ['r0', 'r1', 'r2', 'r3', 'r4'].slice(0, random.between(2, 5)),
    activeMs,
    settleMs: short ? 15_000 : 30_000,
    lostNotices: has('lost-notices') ? random.next() * 0.2 : 0,
    events,
    // Drawn last, so the other draws of a seed stay what they were before this fault existed.
    clockSkewMs: has('clock-skew')
      ? Array.from({ length: replicas }, () => [-40_000, 0, 40_000][random.int(3)])
      : [],
  };
}

/** A readable one-line summary of a scenario. */
export function describeScenario(s: Scenario): string {
  const servers = s.servers
    .map(
      (x, i) =>
        `api${i}(cache ${x.cacheLag.join('-')}ms, loads ${x.loadLag.join('-')}ms${x.faults.conflict ? `, 409 ${(x.faults.conflict * 100).toFixed(0)}%` : ''}${x.faults.invalid ? ', 422 5%' : ''})`,
    )
    .join(' ');
  return `seed ${s.seed}: ${s.replicas} replica(s), ${s.users} user(s), rules ${s.ruleNames.join(',')}, ${servers}${s.clockSkewMs.some((x) => x !== 0) ? `, clocks ${s.clockSkewMs.map((x) => `${x / 1000}s`).join('/')}` : ''}, faults [${[...s.faults].join(',')}]`;
}
