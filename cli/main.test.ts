import { join } from 'node:path';
import { EXIT } from './exit';
import { CommandIO } from './io';
import { main } from './main';

function captured(): { io: CommandIO; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: { stdout: (t) => (out += t), stderr: (t) => (err += t), readStdin: async () => '' },
    out: () => out,
    err: () => err,
  };
}

describe('modrule command line', () => {
  it('lists the commands on stderr and exits 1 (bad usage) without one', async () => {
    const c = captured();
    expect(await main([], c.io)).toBe(EXIT.error);
    for (const name of ['select', 'apply', 'test', 'validate', 'serve', 'operator'])
      expect(c.err()).toContain(name);
  });

  it('exits 0 for --help', async () => {
    const c = captured();
    expect(await main(['--help'], c.io)).toBe(0);
    expect(c.out()).toMatch(/^usage: modrule <command>/);
  });

  it('starts every command summary of the usage in one column', async () => {
    const c = captured();
    await main(['--help'], c.io);
    const lines = c.out().split('\n');
    const commands = lines.slice(
      lines.indexOf('commands:') + 1,
      lines.indexOf('', lines.indexOf('commands:')),
    );
    expect(commands.map((l) => l.trim().split(/\s+/)[0])).toContain('post-render');
    // The column after the name and its padding: the same on every line, and a name never runs into it.
    const columns = commands.map((l) => /^ {2}\S+ {2,}/.exec(l)?.[0].length);
    expect(columns.every((col) => col !== undefined && col === columns[0])).toBe(true);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(100);
  });

  it('names an unknown command', async () => {
    const c = captured();
    expect(await main(['aply'], c.io)).toBe(EXIT.error);
    expect(c.err()).toContain('unknown command "aply"');
  });

  it('dispatches to a subcommand with its arguments', async () => {
    const c = captured();
    const file = join(__dirname, '..', 'fixtures', 'deployment.yaml');
    expect(await main(['select', '$.metadata.name', '--file', file, '--output', 'json'], c.io)).toBe(0);
    expect(JSON.parse(c.out())).toEqual([{ value: 'nginx', path: '/metadata/name', indices: [] }]);
  });

  it("turns a subcommand's usage error into exit 1 with the command's name", async () => {
    const c = captured();
    expect(await main(['apply', '--file', '/does/not/exist'], c.io)).toBe(EXIT.error);
    expect(c.err()).toMatch(/^modrule apply: /);
  });

  it.each([
    [['apply', '--rule', 'rules/'], "unknown option '--rule' (did you mean --rules?)", 'modrule apply'],
    [['test', 'x', '--junt', 'r.xml'], "unknown option '--junt' (did you mean --junit?)", 'modrule test'],
    [['validate', 'x', '--strikt'], "unknown option '--strikt' (did you mean --strict?)", 'modrule validate'],
    [['apply', '--rules', 'x', '--bogus'], "unknown option '--bogus'", 'modrule apply'],
  ])(
    'an unknown option %j: one line, the nearest option, where the options are listed',
    async (args, what, name) => {
      const c = captured();
      expect(await main(args, c.io)).toBe(EXIT.error);
      expect(c.err()).toBe(`${name}: ${what}; "${name} --help" lists the options\n`);
    },
  );
});
