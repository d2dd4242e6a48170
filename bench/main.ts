import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BenchRow, BenchSuite } from './types';

function format(rows: BenchRow[]): string {
  const header = ['suite', 'case', 'ops/s', 'target', 'notes'];
  const body = rows.map((r) => [
    r.suite,
    r.case,
    r.opsPerSec === null ? '-' : Math.round(r.opsPerSec).toLocaleString('en-US'),
    r.target ? `${r.pass ? 'PASS' : 'FAIL'} ${r.target}` : '',
    r.notes ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

/** Names after --only (repeatable, comma-separated) or bare arguments: suites (engine, dragnet) or workloads. */
function selection(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] === '--only' ? argv[++i] : argv[i].replace(/^--only=/, '');
    if (a) out.push(...a.split(',').filter(Boolean));
  }
  if (process.env.MODRULE_BENCH_ONLY) out.push(...process.env.MODRULE_BENCH_ONLY.split(',').filter(Boolean));
  return out;
}

/** Runs every bench/*.bench suite (or those named with --only) and prints one table. */
async function main(): Promise<void> {
  const only = selection(process.argv.slice(2));
  const files = readdirSync(__dirname).filter((f) => /\.bench\.js$/.test(f));
  const rows: BenchRow[] = [];
  for (const f of files.sort()) {
    const name = f.replace(/\.bench\.js$/, '');
    const suite = (await import(join(__dirname, f))) as { run: BenchSuite; workloads?: string[] };
    const picked = only.filter((o) => suite.workloads?.includes(o));
    if (only.length && !only.includes(name) && picked.length === 0) continue;
    process.stderr.write(`running ${name}...\n`);
    rows.push(...(await suite.run(only.includes(name) ? [] : picked)));
  }
  process.stdout.write(format(rows) + '\n');
  const failed = rows.filter((r) => r.target && !r.pass).length;
  if (failed > 0) process.stdout.write(`${failed} target(s) not met\n`);
}

void main();
