// `npm run simulate -- [--seed S] [--schedules N] [--faults a,b|none|all] [--short] [--trace]`: runs N schedules from
// seed S (default 1, 200 schedules), prints each failure with its seed, its schedule and the invariant broken, and
// exits 1 if any failed. `--seed S` alone (N = 1) replays that schedule exactly and prints it.
import { FAULTS, Fault } from './scenario';
import { runSchedule, RunResult } from './run';

interface Args {
  seed: number;
  schedules: number;
  faults: Set<Fault>;
  trace: boolean;
  short: boolean;
}

function parse(argv: string[]): Args {
  const args: Args = { seed: 1, schedules: 200, faults: new Set(FAULTS), trace: false, short: false };
  let single = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '--seed') {
      args.seed = Number(value());
      single = true;
    } else if (flag === '--schedules') {
      args.schedules = Number(value());
      single = false;
    } else if (flag === '--faults') {
      const v = value();
      const names = v === 'none' ? [] : v === 'all' ? [...FAULTS] : v.split(',');
      for (const n of names)
        if (!(FAULTS as readonly string[]).includes(n))
          throw new Error(`unknown fault ${n} (known: ${FAULTS.join(', ')})`);
      args.faults = new Set(names as Fault[]);
    } else if (flag === '--trace') args.trace = true;
    else if (flag === '--short') args.short = true;
    else throw new Error(`unknown option ${flag}`);
  }
  if (single && !argv.includes('--schedules')) args.schedules = 1;
  if (!Number.isInteger(args.seed) || !Number.isInteger(args.schedules) || args.schedules < 1)
    throw new Error('--seed and --schedules take whole numbers (schedules at least 1)');
  return args;
}

function report(r: RunResult, trace: boolean): void {
  if (!r.violation && !trace) return;
  const head = r.violation
    ? `FAILED seed ${r.seed}: ${r.violation.invariant}: ${r.violation.message}`
    : `passed seed ${r.seed}`;
  process.stdout.write(
    `\n${head}\nschedule (${r.steps} steps):\n${r.trace.map((l) => `  ${l}`).join('\n')}\n`,
  );
  if (r.violation) process.stdout.write(`replay: npm run simulate -- --seed ${r.seed}${faultsFlag(r)}\n`);
}

function faultsFlag(r: RunResult): string {
  const f = [...r.scenario.faults];
  const faults = f.length === FAULTS.length ? '' : ` --faults ${f.length ? f.join(',') : 'none'}`;
  return `${faults}${r.scenario.settleMs < 30_000 ? ' --short' : ''}`;
}

async function main(): Promise<number> {
  const args = parse(process.argv.slice(2));
  const started = Date.now();
  const failures = new Map<string, number[]>();
  let checked = 0;
  let said = 0;
  for (let n = 0; n < args.schedules; n++) {
    const r = await runSchedule({ seed: args.seed + n, faults: args.faults, short: args.short });
    checked += r.objectsChecked;
    said += r.saidMisses;
    report(r, args.trace);
    if (r.violation)
      failures.set(r.violation.invariant, [...(failures.get(r.violation.invariant) ?? []), r.seed]);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `\n${args.schedules} schedule(s) from seed ${args.seed} in ${seconds}s, ${checked} objects checked ` +
      `(${said} not patched after their rule's writer was told it might not be); `,
  );
  if (failures.size === 0) process.stdout.write('no invariant broken\n');
  else
    process.stdout.write(
      `failed: ${[...failures].map(([inv, seeds]) => `${inv} (${seeds.length}: seeds ${seeds.slice(0, 10).join(', ')}${seeds.length > 10 ? ', ...' : ''})`).join('; ')}\n`,
    );
  return failures.size ? 1 : 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`simulate: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
