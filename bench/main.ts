import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BenchRow, BenchSuite } from './types';

function format(rows: BenchRow[]): string {
  const header = ['suite', 'case', 'ops/s', 'notes'];
  const body = rows.map((r) => [
    r.suite,
    r.case,
    r.opsPerSec === null ? '-' : Math.round(r.opsPerSec).toLocaleString('en-US'),
    r.notes ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join(' | ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

/** Runs every bench/*.bench suite (or those named on the command line) and prints one table. */
async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const files = readdirSync(__dirname).filter((f) => /\.bench\.js$/.test(f));
  const rows: BenchRow[] = [];
  for (const f of files.sort()) {
    const name = f.replace(/\.bench\.js$/, '');
    if (only.length && !only.includes(name)) continue;
    const suite = (await import(join(__dirname, f))) as { run: BenchSuite };
    process.stderr.write(`running ${name}...\n`);
    rows.push(...(await suite.run()));
  }
  process.stdout.write(format(rows) + '\n');
}

void main();
