import FakeTimers from '@sinonjs/fake-timers';
import { messageOf } from '../../util/errors';
import { Writable } from 'node:stream';
import winston from 'winston';
import { Logger, silentLogger } from '../../util/logger';
import { Random } from './random';
import { Sabotage } from './replica';
import { describeScenario, Fault, FAULTS, Scenario, scenarioOf } from './scenario';
import { Users, Violation } from './users';
import { configSends, World } from './world';

export interface RunOptions {
  seed: number;
  /** The faults allowed (default all). */
  faults?: ReadonlySet<Fault>;
  sabotage?: Sabotage;
  /** Short schedules (users act 1.5-3 s, settle 15 s) for npm test; default 3-8 s, settle 30 s. */
  short?: boolean;
}

export interface RunResult {
  seed: number;
  scenario: Scenario;
  violation: Violation | null;
  /** The schedule: every step taken, readable. */
  trace: string[];
  steps: number;
  ruleWrites: number;
  objectsChecked: number;
  /** Objects not patched after a rule write whose writer was told it might not be in force (and why). */
  saidMisses: number;
  configWrites: number;
}

const START = Date.UTC(2030, 0, 1);
/** Configuration writes allowed per rule change and per replica start (beyond that: a write storm). */
const WRITES_PER_CHANGE = 4;

/** Starts a replica on a random API server. */
function startReplica(world: World, i: number): void {
  const server = world.random.pick(world.servers);
  world.log(`replica${i} starts on ${server.name}`);
  world.replicas[i].start(server.client());
}

/** Schedules the scenario's fault events. */
function scheduleFaults(world: World, counts: { starts: number }): void {
  const { random } = world;
  for (const e of world.scenario.events) {
    setTimeout(() => {
      if (e.what === 'api-restart') {
        const down = random.between(50, 2000);
        const compact = random.chance(0.5);
        world.log(
          `${world.servers[e.target].name} restarts (down ${down}ms${compact ? ', history compacted' : ''})`,
        );
        world.servers[e.target].restart(down, compact);
      } else if (e.what === 'replica-restart') {
        const r = world.replicas[e.target];
        // A rolling restart (a PodDisruptionBudget): never the last ready replica.
        if (!r.up || !world.replicas.some((o) => o !== r && o.ready)) return;
        world.log(`${r.name} drains and restarts`);
        void r.stop().then(() => {
          counts.starts++;
          startReplica(world, e.target);
        });
      } else if (e.what === 'rotation') {
        world.keyVersion++;
        world.log(`serving certificate rotated (key ${world.keyVersion})`);
        const version = world.keyVersion;
        for (const r of world.replicas)
          setTimeout(
            () => {
              r.keyVersion = Math.max(r.keyVersion, version);
              world.log(`${r.name} loads key ${version}`);
            },
            random.between(0, 3000),
          );
      } else {
        const s = world.servers[e.target];
        const ms = random.between(500, 5000);
        world.log(`${s.name} refuses probe Events for ${ms}ms`);
        s.refusesProbes = true;
        setTimeout(() => (s.refusesProbes = false), ms);
      }
    }, e.at);
  }
}

/** The invariants checked after every step. */
function checkStep(world: World, users: Users, counts: { starts: number }): Violation | null {
  if (users.violation) return users.violation;
  const stored = world.stored();
  for (const w of users.inForce()) {
    if (!configSends(stored, w.kind, w.namespace, world.nsLabels(w.namespace)))
      return {
        invariant: 'narrowed-away',
        message: `ModRule ${w.namespace}/${w.name} e${w.edition} (${w.kind}) is in force, but the stored dragnet registration no longer sends its objects`,
      };
  }
  const changes = users.writes.filter((w) => w.ok).length;
  const allowed = WRITES_PER_CHANGE * (changes + counts.starts + world.replicas.length) + 4;
  if (world.configWrites > allowed)
    return {
      invariant: 'write-storm',
      message: `${world.configWrites} writes of the webhook configuration for ${changes} rule changes and ${counts.starts} replica restarts (bound ${allowed})`,
    };
  return null;
}

/** At the end, once the world settled: nothing held, nothing waiting. */
function checkEnd(world: World): Violation | null {
  if (world.requestsInFlight > 0)
    return {
      invariant: 'hang',
      message: `${world.requestsInFlight} webhook request(s) still unanswered ${world.scenario.settleMs}ms after the last write`,
    };
  const waiting = world.replicas.filter((r) => r.pendingAdmitted() > 0).map((r) => r.name);
  if (waiting.length)
    return { invariant: 'hang', message: `admitted rules never settled on ${waiting.join(', ')}` };
  return null;
}

/**
 * Runs one schedule: the world and users drawn from the seed, simulated time driven by fake timers one timer at a
 * time (the promises in between run to completion), the invariants checked after every step.
 */
export async function runSchedule(options: RunOptions): Promise<RunResult> {
  const realImmediate = setImmediate;
  const flush = () => new Promise<void>((resolve) => realImmediate(resolve));
  const random = new Random(options.seed);
  const realRandom = Math.random;
  const clock = FakeTimers.withGlobal(globalThis).install({
    now: START,
    toFake: [
      'Date',
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'setImmediate',
      'clearImmediate',
      'performance',
      'hrtime',
    ],
  });
  Math.random = () => random.next();
  const scenario = scenarioOf(options.seed, options.faults ?? new Set(FAULTS), random, options.short);
  // SIM_DETAIL=1: the operator's own log lines (debug and up) go into the schedule too.
  let into: World | null = null;
  const logger = process.env.SIM_DETAIL ? detailLogger((line) => into?.log(line)) : silentLogger();
  const world = new World(random.fork(), scenario, logger, options.sabotage);
  into = world;
  const users = new Users(world);
  const counts = { starts: 0 };
  let violation: Violation | null = null;
  let steps = 0;
  try {
    world.log(describeScenario(scenario));
    world.replicas.forEach((_, i) => startReplica(world, i));
    scheduleFaults(world, counts);
    const begin = START + 1500;
    const end = begin + scenario.activeMs;
    setTimeout(() => {
      for (let u = 0; u < scenario.users; u++) void users.run(u, end);
    }, 1500);
    let over = false;
    setTimeout(() => (over = true), 1500 + scenario.activeMs + scenario.settleMs);
    for (;;) {
      await flush();
      violation = checkStep(world, users, counts);
      if (violation || over || clock.countTimers() === 0) break;
      clock.next();
      steps++;
    }
    violation ??= checkEnd(world);
  } catch (err) {
    violation = { invariant: 'simulation-error', message: messageOf(err) };
  } finally {
    if (violation) world.log(`VIOLATED ${violation.invariant}: ${violation.message}`);
    clock.uninstall();
    Math.random = realRandom;
  }
  return {
    seed: options.seed,
    scenario,
    violation,
    trace: world.trace,
    steps,
    ruleWrites: users.writes.length,
    objectsChecked: users.objectsChecked,
    saidMisses: users.saidMisses,
    configWrites: world.configWrites,
  };
}

/** A logger whose lines go to `log` as `log: message {fields}` (SIM_DETAIL). */
function detailLogger(log: (line: string) => void): Logger {
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      const { message, level, ...fields } = JSON.parse(chunk.toString('utf8')) as Record<string, unknown>;
      log(`  [${String(level)}] ${String(message)} ${JSON.stringify(fields)}`);
      done();
    },
  });
  return winston.createLogger({
    level: 'debug',
    format: winston.format.json(),
    transports: [new winston.transports.Stream({ stream })],
  });
}
