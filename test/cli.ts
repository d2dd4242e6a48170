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

let shimRoot: string | undefined;

/**
 * A folder laid out as the repository after `npm run build`, as far as the command goes: the repository's own
 * bin/modrule and bin/modrule-post-renderer, and a dist/cli/main.js that loads the CLI from the TypeScript sources
 * (and runs it when run itself, as the built one does). So what the scripts do with the process (its exit code, a
 * closed pipe) is tested, and a recipe that runs `bin/modrule` or `node dist/cli/main.js` runs there as written.
 */
export function modruleRootDir(): string {
  if (shimRoot) return shimRoot;
  const root = mkdtempSync(join(tmpdir(), 'modrule-bin-'));
  mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
  writeFileSync(
    join(root, 'dist', 'cli', 'main.js'),
    `require(${JSON.stringify(join(ROOT, 'test', 'ts-register.js'))});\n` +
      `module.exports = require(${JSON.stringify(join(ROOT, 'cli', 'main.ts'))});\n` +
      'if (require.main === module) module.exports.runAsProcess(process.argv.slice(2));\n',
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
  shimRoot = root;
  return root;
}

/** A folder holding the executables `modrule` and `modrule-post-renderer` (put it first on PATH). */
export function modruleBinDir(): string {
  return join(modruleRootDir(), 'path');
}

/** Spawns `command` with `args` (found on PATH, or `env.PATH`, with modruleBinDir() first), feeds `stdin`, collects the output. */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { stdin?: string; cwd?: string; env?: Record<string, string> } = {},
): Promise<ProcessResult> {
  const env = {
    ...process.env,
    ...options.env,
    PATH: `${modruleBinDir()}${delimiter}${options.env?.PATH ?? process.env.PATH ?? ''}`,
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
