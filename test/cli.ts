// Runs `modrule` as a separate process, the way a shell, a CI job or Helm runs it: an executable on PATH, arguments,
// standard input and output. The executable is bin/modrule, running the CLI from the TypeScript sources (see
// ts-register.js).
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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

/**
 * A folder holding the executables `modrule` and `modrule-post-renderer` (put it first on PATH). They run the
 * repository's own bin/ scripts, as `npm link` or `bin/modrule` do, with a dist/cli/main.js beside them that loads
 * the CLI from the TypeScript sources: what the scripts do with the process (its exit code, a closed pipe) is tested.
 */
export function modruleBinDir(): string {
  if (binDir) return binDir;
  const root = mkdtempSync(join(tmpdir(), 'modrule-bin-'));
  mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
  writeFileSync(
    join(root, 'dist', 'cli', 'main.js'),
    `require(${JSON.stringify(join(ROOT, 'test', 'ts-register.js'))});\n` +
      `module.exports = require(${JSON.stringify(join(ROOT, 'cli', 'main.ts'))});\n`,
  );
  mkdirSync(join(root, 'bin'));
  mkdirSync(join(root, 'path'));
  for (const name of ['modrule', 'modrule-post-renderer']) {
    copyFileSync(join(ROOT, 'bin', name), join(root, 'bin', name));
    // The node running the tests, whichever `node` is first on PATH.
    const script = `#!/bin/sh\nexec "${process.execPath}" "${join(root, 'bin', name)}" "$@"\n`;
    writeFileSync(join(root, 'path', name), script);
    chmodSync(join(root, 'path', name), 0o755);
  }
  binDir = join(root, 'path');
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
