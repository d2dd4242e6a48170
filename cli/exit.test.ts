import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from './exit';
import { main } from './main';
import { CommandResult, runCommand } from './testing';

const ROOT = join(__dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'modrule-exit-'));
const write = (name: string, text: string): string => {
  writeFileSync(join(tmp, name), text);
  return join(tmp, name);
};

const modrule = (args: string[]): Promise<CommandResult> => runCommand(main, args);

const EXTERNAL_IPS = join(ROOT, 'examples', 'kubemod', 'reject-malicious-external-ips');
const brokenRule =
  'apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: bad\nspec:\n  type: Patch\n';
// examples/testing with one expectation turned around: a failing case.
const failingSuite = (): string => {
  const dir = mkdtempSync(join(tmp, 'suite-'));
  for (const f of ['rules.yaml', 'resources.yaml'])
    writeFileSync(join(dir, f), readFileSync(join(ROOT, 'examples', 'testing', f)));
  const test = readFileSync(join(ROOT, 'examples', 'testing', 'modrule-test.yaml'), 'utf8');
  writeFileSync(join(dir, 'modrule-test.yaml'), test.replace(/^ {4}rejected: .*$/m, '    unchanged: true'));
  return dir;
};

// The README's table: the same three statuses mean the same thing for every subcommand.
describe('one exit status scheme for every subcommand', () => {
  test.each<[string, () => string[], number]>([
    ['select: results', () => ['select', '$.kind', '-f', join(ROOT, 'fixtures', 'pod.yaml')], EXIT.ok],
    [
      'select: an invalid select',
      () => ['select', '$.kind ==', '-f', join(ROOT, 'fixtures', 'pod.yaml')],
      EXIT.error,
    ],
    ['select: unreadable input', () => ['select', '$.kind', '-f', join(tmp, 'none.yaml')], EXIT.error],
    [
      'apply: all admitted',
      () => [
        'apply',
        '--rules',
        join(EXTERNAL_IPS, 'modrule.yaml'),
        '-f',
        join(ROOT, 'fixtures', 'pod.yaml'),
      ],
      EXIT.ok,
    ],
    [
      'apply: an object rejected',
      () => ['apply', '--rules', join(EXTERNAL_IPS, 'modrule.yaml'), '-f', join(EXTERNAL_IPS, 'input.yaml')],
      EXIT.finding,
    ],
    [
      'apply: an invalid ModRule',
      () => [
        'apply',
        '--rules',
        write('bad-rule.yaml', brokenRule),
        '-f',
        join(ROOT, 'fixtures', 'pod.yaml'),
      ],
      EXIT.error,
    ],
    [
      'apply: broken YAML input',
      () => ['apply', '--rules', join(EXTERNAL_IPS, 'modrule.yaml'), '-f', write('broken.yaml', 'a: [1\n')],
      EXIT.error,
    ],
    ['apply: an unknown flag', () => ['apply', '--rulez', 'x'], EXIT.error],
    ['test: all cases pass', () => ['test', join(ROOT, 'examples', 'testing')], EXIT.ok],
    ['test: a case fails', () => ['test', failingSuite()], EXIT.finding],
    [
      'test: a suite that does not load',
      () => ['test', write('modrule-test.yaml', 'kind: [x\n')],
      EXIT.error,
    ],
    ['validate: no problems', () => ['validate', join(EXTERNAL_IPS, 'modrule.yaml')], EXIT.ok],
    [
      'validate: a rule with a problem',
      () => ['validate', write('bad-rule2.yaml', brokenRule)],
      EXIT.finding,
    ],
    ['validate: a PATH that cannot be read', () => ['validate', join(tmp, 'none.yaml')], EXIT.error],
    ['validate: an unknown flag', () => ['validate', '--nope', 'x'], EXIT.error],
    ['serve: an unknown flag', () => ['serve', '--local', '--nope'], EXIT.error],
    ['serve: without --local', () => ['serve'], EXIT.error],
    ['operator: an unknown flag', () => ['operator', '--nope'], EXIT.error],
    ['operator: a bad value', () => ['operator', '--cert-mode', 'maybe'], EXIT.error],
    ['no command', () => [], EXIT.error],
    ['an unknown command', () => ['aply'], EXIT.error],
  ])('%s', async (_name, args, code) => {
    const r = await modrule(args());
    // stderr is in the comparison so that a failure shows the message.
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code, stderr: expect.any(String) });
    if (code === EXIT.error) expect(r.stderr).not.toBe('');
  });

  test.each(['select', 'apply', 'test', 'validate', 'serve', 'operator', 'post-render'])(
    '%s --help exits 0 and states the same scheme',
    async (name) => {
      const r = await modrule([name, '--help']);
      expect(r.code).toBe(EXIT.ok);
      expect(r.stdout).toContain('Exit status: 0 success');
      expect(r.stdout).toContain('1 bad usage or input');
    },
  );
});
