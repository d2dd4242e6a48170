// `npm start` (the README's first command) must not leave a server behind holding the port when it is stopped,
// whether by SIGTERM to npm (a process manager, `kill`, an IDE's stop button) or by Ctrl-C in a terminal.
// npm forwards SIGTERM and SIGINT to the shell running the script, and a shell waiting for a command does not
// pass them on, so the script must exec the server in place of the shell.
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..');
const TS_REGISTER = join(ROOT, 'test', 'ts-register.js');
const SERVE_ARGS = ['serve', '--local', '--port', '0', '--health-port', '0'];

/**
 * A package with our `start` script as it is, a `build` that does nothing (the real one takes a minute), and a
 * dist/cli/main.js that runs the CLI from the sources, as bin/modrule runs the built one.
 */
function startPackage(): string {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const dir = mkdtempSync(join(tmpdir(), 'modrule-npm-start-'));
  const pkg = {
    name: 'npm-start-check',
    private: true,
    scripts: { build: 'node -e 0', start: scripts.start },
  };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
  mkdirSync(join(dir, 'dist', 'cli'), { recursive: true });
  writeFileSync(
    join(dir, 'dist', 'cli', 'main.js'),
    `require(${JSON.stringify(TS_REGISTER)});\n` +
      `require(${JSON.stringify(join(ROOT, 'cli', 'main.ts'))}).main(process.argv.slice(2)).then((code) => {\n` +
      '  process.exitCode = code;\n});\n',
  );
  return dir;
}

interface Started {
  child: ChildProcess;
  /** The process group the child leads (what a terminal signals on Ctrl-C). */
  pgid: number;
  /** The webhook port and the health port. */
  ports: number[];
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const groups: number[] = [];

// The child leads a process group of its own, as a shell's foreground job does. Resolves once the server listens.
async function startServer(command: string, args: string[], cwd: string): Promise<Started> {
  const child = spawn(command, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false', NO_COLOR: '1' },
  });
  if (child.pid === undefined) throw new Error(`cannot start ${command}`);
  const pgid = child.pid;
  groups.push(pgid);
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
  // 'close' comes once the output is all read; a server left behind holds the pipes open, so wait for it briefly.
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  ).then(async (status) => {
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
    return status;
  });
  const deadline = Date.now() + 45_000;
  for (;;) {
    const webhook = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(output);
    const health = /health and metrics: http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
    if (webhook && health && output.includes('CA bundle: '))
      return { child, pgid, ports: [Number(webhook[1]), Number(health[1])], output: () => output, exited };
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`${command} ${args.join(' ')} did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The folder of the CA bundle the banner names (a temporary folder of the server's own). */
function certFolder(output: string): string {
  const ca = /CA bundle: (\S+)/.exec(output)?.[1];
  if (!ca) throw new Error(`no CA bundle in the output:\n${output}`);
  return dirname(ca);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

// Whatever survived is checked for a few seconds (a server closing may take a moment), then reported.
async function leftBehind(
  pgid: number,
  ports: number[],
): Promise<{ processes: boolean; portsHeld: number[] }> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const held: number[] = [];
    for (const p of ports) if (!(await portFree(p))) held.push(p);
    const processes = groupAlive(pgid);
    if ((!processes && held.length === 0) || Date.now() > deadline) return { processes, portsHeld: held };
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('npm start', () => {
  jest.setTimeout(90_000);
  const dir = startPackage();
  afterEach(() => {
    // A test that failed must not leave its server running: kill what is left of its group.
    for (const pgid of groups.splice(0)) if (pgid > 0 && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  });

  test('stopped with SIGTERM to npm: the server stops too and frees its ports', async () => {
    const s = await startServer('npm', ['start', '--silent', '--', ...SERVE_ARGS.slice(2)], dir);
    for (const p of s.ports) expect(await portFree(p)).toBe(false);
    s.child.kill('SIGTERM');
    await s.exited;
    expect(await leftBehind(s.pgid, s.ports)).toEqual({ processes: false, portsHeld: [] });
    expect(s.output()).toContain('received SIGTERM, finishing in-flight requests...');
    expect(existsSync(certFolder(s.output()))).toBe(false);
  });

  test('stopped with Ctrl-C (SIGINT to the group, and again from npm): it drains once, nothing is left', async () => {
    const s = await startServer('npm', ['start', '--silent', '--', ...SERVE_ARGS.slice(2)], dir);
    process.kill(-s.pgid, 'SIGINT');
    const exit = await s.exited;
    expect(await leftBehind(s.pgid, s.ports)).toEqual({ processes: false, portsHeld: [] });
    expect(s.output().match(/received SIGINT/g)).toHaveLength(1);
    // The certificates it made for itself (tls.key among them) went with it.
    expect(existsSync(certFolder(s.output()))).toBe(false);
    // npm ends as a Ctrl-C'd command does: 0, or by SIGINT when npm's copy of the signal reaches the server while
    // it is already exiting (after it has drained and closed). Never an error status.
    expect([
      { code: 0, signal: null },
      { code: null, signal: 'SIGINT' },
    ]).toContainEqual(exit);
  });

  // The two SIGINTs of a Ctrl-C under npm usually arrive together and count as one; here the second comes while a
  // request is still in flight, as it does when npm forwards it a moment later.
  test('a repeated signal while draining does not cut the in-flight request short', async () => {
    const s = await startServer(
      process.execPath,
      ['-r', TS_REGISTER, join(ROOT, 'cli', 'main.ts'), ...SERVE_ARGS],
      ROOT,
    );
    const url = /listening on (https:\/\/\S+)/.exec(s.output())?.[1] ?? '';
    const ca = readFileSync(/CA bundle: (.*)\n/.exec(s.output())?.[1] ?? '', 'utf8');
    const review = readFileSync(join(ROOT, 'examples', 'local', 'reviews', 'deployment-create.json'));
    // Headers and a part of the body now, the rest after both signals.
    let body = '';
    const answered = new Promise<number>((resolve, reject) => {
      const req = request(`${url}/dragnet-webhook`, {
        method: 'POST',
        ca,
        headers: { 'Content-Type': 'application/json', 'Content-Length': review.length },
      });
      req.on('response', (res) => {
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.write(review.subarray(0, 100));
      setTimeout(() => {
        s.child.kill('SIGINT');
        setTimeout(() => s.child.kill('SIGINT'), 300);
        setTimeout(() => req.end(review.subarray(100)), 800);
      }, 300);
    });
    expect(await answered).toBe(200);
    expect(JSON.parse(body)).toMatchObject({ kind: 'AdmissionReview', response: { allowed: true } });
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.output().match(/received SIGINT/g)).toHaveLength(1);
  });
});
