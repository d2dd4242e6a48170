import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
  {
    args: [
      'apply',
      '--rules',
      join(TESTING, 'rules.yaml'),
      '-f',
      join(TESTING, 'resources.yaml'),
      '--on-error=warn',
    ],
  },
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

describe('a reader that stops after the first line (modrule apply ... | head -1)', () => {
  // The pipe holds 64 KiB: below that the writes succeed before head exits, past it a write meets the closed pipe.
  it('exits 0 with nothing on standard error when the output passes the pipe buffer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-head-'));
    const configMaps = Array.from(
      { length: 2000 },
      (_, i) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c${i + 1}}\n---\n`,
    ).join('');
    writeFileSync(join(dir, 'cms.yaml'), configMaps);
    const rules = join(TESTING, 'rules.yaml');
    const all = await runProcess('modrule', ['apply', '--rules', rules, '-f', join(dir, 'cms.yaml')]);
    expect(all.code).toBe(0);
    expect(all.stdout.length).toBeGreaterThan(64 * 1024);
    // As a user types it, with pipefail so the shell's status is modrule's.
    const script = `set -o pipefail; modrule apply --rules "${rules}" -f cms.yaml | head -1`;
    const head = await runProcess('bash', ['-c', script], { cwd: dir });
    expect(head).toEqual({ code: 0, stdout: 'apiVersion: v1\n', stderr: '' });
  });
});
