import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { modruleBinDir, runProcess } from '../test/cli';

// `modrule ... | head -1`: the reader closes the pipe before (or while) the command writes. Every command that writes
// standard output must then end as it would have with a reader, minus the output: same status, nothing more on
// standard error (no EPIPE stack trace).

const ROOT = join(__dirname, '..');
const TESTING = join(ROOT, 'examples', 'testing');
const MANIFESTS = readFileSync(join(TESTING, 'resources.yaml'), 'utf8');

const CASES: Array<{ args: string[]; stdin?: string }> = [
  { args: ['--help'] },
  { args: ['select', '$.metadata.name', '-f', join(TESTING, 'resources.yaml')] },
  // Exit 2 (a Deployment rejected): the status survives the closed pipe.
  { args: ['apply', '--rules', join(TESTING, 'rules.yaml'), '-f', join(TESTING, 'resources.yaml')] },
  { args: ['apply', '--rules', join(ROOT, 'examples', 'helm', 'rules'), '-f', '-'], stdin: MANIFESTS },
  { args: ['post-render', '--rules', join(ROOT, 'examples', 'helm', 'rules')], stdin: MANIFESTS },
  { args: ['test', TESTING] },
  { args: ['validate', TESTING, '-o', 'json'] },
  { args: ['scope', TESTING] },
  { args: ['export', '--native', '--rules', TESTING] },
  ...['audit', 'serve', 'operator', 'explain'].map((c) => ({ args: [c, '--help'] })),
];

/** Runs modrule with its standard output closed before it writes: nobody reads it. */
function withClosedOutput(args: string[], stdin = ''): Promise<{ code: number | null; stderr: string }> {
  const env = { ...process.env, PATH: `${modruleBinDir()}${delimiter}${process.env.PATH ?? ''}` };
  return new Promise((resolve, reject) => {
    const child = spawn('modrule', args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(stdin);
  });
}

describe('a closed standard output (modrule ... | head -1)', () => {
  it.each(CASES.map((c) => [c.args.join(' '), c]))(
    'modrule %s: the same status and standard error as with a reader',
    async (_, c) => {
      const read = await runProcess('modrule', c.args, { stdin: c.stdin });
      expect(read.stdout).not.toBe('');
      const closed = await withClosedOutput(c.args, c.stdin);
      expect(closed.stderr).toBe(read.stderr);
      expect(closed.code).toBe(read.code);
    },
  );
});
