// The real Prometheus tools for tests: promtool (rule checks, rule unit tests) and the Prometheus server, from
// Debian's `prometheus` package (.ci/run installs it and sets MODRULE_PROMETHEUS_BIN=/usr/bin). With the variable
// set, a missing binary fails the tests instead of skipping them.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const configured = process.env.MODRULE_PROMETHEUS_BIN;

/** The folder holding promtool and prometheus: MODRULE_PROMETHEUS_BIN, else the one on PATH, else null. */
function binDir(): string | null {
  if (configured) return configured;
  const r = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  const found = r.status === 0 ? r.stdout.trim() : '';
  return found ? join(found, '..') : null;
}

/** The path of a Prometheus tool, or null (and a notice) when it is not installed; throws when CI named a folder without it. */
export function prometheusTool(tool: 'promtool' | 'prometheus'): string | null {
  const dir = binDir();
  const bin = dir ? join(dir, tool) : '';
  if (bin && existsSync(bin)) return bin;
  if (configured)
    throw new Error(`MODRULE_PROMETHEUS_BIN=${configured} has no ${tool} (apt-get install prometheus)`);
  process.stderr.write(
    `prometheus: no ${tool} found; skipping the tests that need it (apt-get install prometheus, or point ` +
      'MODRULE_PROMETHEUS_BIN at a folder holding promtool and prometheus)\n',
  );
  return null;
}
