// The Helm recipes of README.md (the chart) and docs/cli.md (the post-renderer), taken from those pages so the
// tests run what users copy.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const PAGES = ['README.md', join('docs', 'cli.md')].map((p) => join(__dirname, '..', '..', p));

/**
 * The commands of the ```bash block of README.md or docs/cli.md whose first line is `# <title>...`, one per
 * command (backslash continuations joined, comments dropped). Throws when there is no such block, so a renamed recipe fails loudly.
 */
export function readmeRecipe(title: string): string[] {
  const text = PAGES.map((p) => readFileSync(p, 'utf8')).join('\n');
  const blocks = [...text.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.startsWith(`# ${title}`));
  if (!block) throw new Error(`README.md and docs/cli.md have no bash block starting with "# ${title}"`);
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** The values a command gives a flag, in order: `--post-renderer-args`, e.g. */
export function flagValues(command: string, flag: string): string[] {
  const words = command.split(/\s+/);
  return words.flatMap((w, i) =>
    w === flag ? [words[i + 1]] : w.startsWith(`${flag}=`) ? [w.slice(flag.length + 1)] : [],
  );
}
