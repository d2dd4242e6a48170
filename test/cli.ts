// Runs `modrule` as a separate process, the way a shell, a CI job or Helm runs it: an executable on PATH, arguments,
// standard input and output. The executable runs the CLI from the TypeScript sources (see ts-register.js).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const ROOT = join(__dirname, '..');

/** What a finished process left. */
export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

let binDir: string | undefined;

/** A folder holding the executables `modrule` and `modrule-post-renderer` (put it first on PATH). */
export function modruleBinDir(): string {
  if (binDir) return binDir;
  binDir = mkdtempSync(join(tmpdir(), 'modrule-bin-'));
  const run = `exec "${process.execPath}" -r "${join(ROOT, 'test', 'ts-register.js')}" "${join(ROOT, 'cli', 'main.ts')}"`;
  for (const [name, command] of [
    ['modrule', `${run} "$@"`],
    ['modrule-post-renderer', `${run} post-render "$@"`],
  ]) {
    writeFileSync(join(binDir, name), `#!/bin/sh\n${command}\n`);
    chmodSync(join(binDir, name), 0o755);
  }
  return binDir;
}

/** Spawns `command` with `args` (found on PATH, with modruleBinDir() first), feeds `stdin`, collects the output. */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { stdin?: string; cwd?: string; env?: Record<string, string> } = {},
): Promise<ProcessResult> {
  const env = {
    ...process.env,
    ...options.env,
    PATH: `${modruleBinDir()}${delimiter}${process.env.PATH ?? ''}`,
    NO_COLOR: '1',
  };
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}
