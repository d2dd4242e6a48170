import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { modruleRootDir, runProcess } from './cli';
import { helmAvailable, newHelm, skipNotice } from './helm/helm';
import { EXIT } from '../cli/exit';
import { TEMPLATE_FUNCTIONS } from '../template';

const doc = (name: string): string => readFileSync(join(__dirname, '..', name), 'utf8');

// The README and the reference it links (docs/) promise a complete list of template functions; keep it true as
// functions are added.
describe('README', () => {
  const readme = doc('README.md');
  const reference = doc('docs/modrule-reference.md');
  const section = reference.slice(
    reference.indexOf("Functions: Go's builtins"),
    reference.indexOf('Not supported: date'),
  );
  const listed = new Set(section.match(/[A-Za-z0-9]+/g));

  it.each([...TEMPLATE_FUNCTIONS].filter((f) => f !== 'call'))('lists the template function %s', (name) => {
    expect(listed.has(name)).toBe(true);
  });

  it('shows the example test suite exactly as examples/testing/ ships it (which npm test runs)', () => {
    const section = doc('docs/testing.md');
    for (const file of ['modrule-test.yaml', 'rules.yaml', 'resources.yaml']) {
      const text = readFileSync(join(__dirname, '..', 'examples', 'testing', file), 'utf8');
      expect(section).toContain('```yaml\n' + text + '```');
    }
  });

  it('gives the exit-status table of cli/exit.ts, one for every subcommand', () => {
    const section = doc('docs/cli.md');
    expect(section).toContain(`| ${EXIT.ok} | success |`);
    expect(section).toContain(`| ${EXIT.finding} | the command found something |`);
    expect(section).toContain(`| ${EXIT.error} | bad usage or input |`);
    for (const name of [
      'apply',
      'post-render',
      'test',
      'validate',
      'select',
      'serve',
      'operator',
      'webhooks',
    ])
      expect(section).toMatch(new RegExp(`^\\| Status \\|.*\`${name}\``, 'm'));
  });

  it('says how to get an image before the install command, and names the image a release publishes', () => {
    const section = readme.slice(
      readme.indexOf('## Install, upgrade, uninstall'),
      readme.indexOf('## Your first'),
    );
    const install = section.indexOf('kubectl apply -f bundle.yaml');
    const before = section.slice(0, install);
    for (const step of ['make image IMAGE=', 'docker push ', 'make bundle IMAGE='])
      expect(before).toContain(step);
    expect(before.indexOf('make image')).toBeLessThan(before.indexOf('make bundle'));
    const bundle = readFileSync(join(__dirname, '..', 'bundle.yaml'), 'utf8');
    const image = /^\s+image: (\S+)$/m.exec(bundle)![1];
    expect(before).toContain(`\`bundle.yaml\` names \`${image}\``);
  });

  it('shows the two set-up commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });
});

/** The bash block that follows `lead` in the README. */
function blockAfter(readme: string, lead: string, language = 'bash'): string {
  const at = readme.indexOf(lead);
  if (at < 0) throw new Error(`README: no "${lead}"`);
  const block = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(readme.slice(at));
  if (!block) throw new Error(`README: no ${language} block after "${lead}"`);
  return block[1];
}

describe('the README, followed literally', () => {
  const readme = doc('README.md');

  it('has no command that needs something outside the repository (../shared, a rules/ folder, my-chart)', () => {
    expect(readme).not.toContain('../shared');
    expect(readme).not.toMatch(/--rules rules\//);
    expect(readme).not.toContain('my-chart');
    // The command is bin/modrule (or npx modrule, or modrule after npm link): a bare `modrule validate x.yaml` to
    // copy is not found. (`modrule apply` in prose names the subcommand.)
    expect(readme).not.toMatch(/`modrule [a-z-]+ [^`-][^`]*`/);
    expect(readme).not.toMatch(/^modrule /m);
  });

  it('runs "Try it offline" as written, in a checkout after npm run build: each command exits 0, quietly', async () => {
    // A checkout as far as these commands go: bin/ and dist/ as after npm run build (test/cli.ts), the repository's
    // fixtures/ and examples/, and my-modrule.yaml as the README writes it.
    const dir = mkdtempSync(join(tmpdir(), 'modrule-readme-'));
    for (const folder of ['fixtures', 'examples'])
      symlinkSync(join(__dirname, '..', folder), join(dir, folder));
    for (const folder of ['bin', 'dist']) symlinkSync(join(modruleRootDir(), folder), join(dir, folder));
    writeFileSync(join(dir, 'my-modrule.yaml'), blockAfter(readme, '## Your first ModRule', 'yaml'));
    const path = join(dir, 'helm-bin');
    mkdirSync(path);
    const helm = helmAvailable();
    if (helm) symlinkSync(newHelm(3).bin, join(path, 'helm'));
    else skipNotice();
    const lines = blockAfter(readme, 'Try it offline first').trim().split('\n');
    expect(lines[0]).toBe('npm run build');
    for (const line of lines.slice(1)) {
      if (!helm && line.startsWith('helm ')) continue;
      const r = await runProcess('bash', ['-c', `set -o pipefail; ${line}`], {
        cwd: dir,
        env: { PATH: `${path}${delimiter}${process.env.PATH ?? ''}` },
      });
      expect({ line, code: r.code, stderr: r.stderr }).toEqual({ line, code: 0, stderr: '' });
      expect(r.stdout).toMatch(/^apiVersion: /);
    }
    expect(existsSync(join(dir, 'my-modrule.yaml'))).toBe(true);
  });

  it("npm test's lint step prints nothing on a file the lint ratchet pins", async () => {
    const { scripts } = JSON.parse(doc('package.json')) as { scripts: Record<string, string> };
    // The eslint step of a script, following `npm run NAME` to that script.
    const eslintOf = (script: string): string[] => {
      for (const step of script.split('&&').map((s) => s.trim())) {
        if (step.startsWith('eslint')) return step.split(/\s+/).slice(1);
        const run = /^npm run ([\w-]+)/.exec(step);
        if (run && /\beslint\b/.test(scripts[run[1]] ?? '')) return eslintOf(scripts[run[1]]);
      }
      throw new Error(`no eslint step in "${script}"`);
    };
    // A file pinned in eslint.limits.json's notYet (over the project's limits, held at its own value).
    const file = 'cli/testfile.ts';
    const eslint = join(__dirname, '..', 'node_modules', '.bin', 'eslint');
    const args = (script: string): string[] => [...eslintOf(script).filter((a) => a !== '.'), file];
    const test = await runProcess(eslint, args(scripts.test));
    expect(test).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});
