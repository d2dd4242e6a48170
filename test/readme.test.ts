import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
