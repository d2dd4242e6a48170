import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';
import { flagValues, readmeRecipe } from './readme';

// The README's Helm recipes run against a real API server in test/e2e/helm.e2e.ts; here, what holds without one.
describe('the Helm recipes of README.md', () => {
  const helm4 = readmeRecipe('Helm 4:');
  const helm3 = readmeRecipe('Helm 3:');
  const install = (recipe: string[]) => recipe.find((c) => c.startsWith('helm install '))!;

  it('give Helm 3 and Helm 4 the same --post-renderer-args', () => {
    expect(flagValues(install(helm4), '--post-renderer-args')).toEqual([
      '--rules=examples/helm/rules/',
      '--namespace=shop',
    ]);
    expect(flagValues(install(helm3), '--post-renderer-args')).toEqual(
      flagValues(install(helm4), '--post-renderer-args'),
    );
    expect(flagValues(install(helm4), '--post-renderer')).toEqual(['modrule']);
    expect(flagValues(install(helm3), '--post-renderer')).toEqual(['modrule-post-renderer']);
  });

  it('name files that exist', () => {
    expect(helm4[0]).toBe('helm plugin install ./helm-plugin/modrule');
    for (const command of [...helm4, ...helm3, ...readmeRecipe('The chart:')])
      for (const path of command.split(/\s+/).filter((w) => w.startsWith('./')))
        expect(existsSync(join(ROOT, path))).toBe(true);
  });
});
