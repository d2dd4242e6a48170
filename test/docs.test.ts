import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

// Every relative link of the README and docs/ leads somewhere: the file exists and, for a #fragment into a
// Markdown file, that file has a heading with that anchor (GitHub's slugs).
const ROOT = join(__dirname, '..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text of a page outside fenced code blocks, one entry per line (blank inside fences). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** The relative link targets of a page, with the line they are on. */
function links(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  prose(text).forEach((line, i) => {
    // Code spans become a word, so a link whose text is code still counts and code that looks like one does not.
    const plain = line.replace(/`[^`]*`/g, 'code');
    for (const m of plain.matchAll(/\]\(([^)\s]+)\)/g))
      if (!/^[a-z]+:/i.test(m[1])) out.push({ line: i + 1, target: m[1] });
  });
  return out;
}

describe('links in README.md and docs/', () => {
  const broken = (page: string): string[] => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    return links(text).flatMap(({ line, target }) => {
      const [path, fragment] = target.split('#', 2);
      const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(path));
      const where = `${page}:${line}: ${target}`;
      if (!existsSync(file)) return [`${where} (no ${relative(ROOT, file)})`];
      if (fragment === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) return [];
      return anchors(readFileSync(file, 'utf8')).has(fragment) ? [] : [`${where} (no such heading)`];
    });
  };

  it.each(PAGES)('%s has no broken relative link', (page) => {
    expect(broken(page)).toEqual([]);
  });

  it('finds links and anchors the way GitHub makes them', () => {
    const heading = anchors(
      '# Title\n### `modrule serve --local`: the webhook\n## Title\n```\n# not a heading\n```\n',
    );
    expect([...heading]).toEqual(['title', 'modrule-serve---local-the-webhook', 'title-1']);
    const found = links(
      '[a](docs/x.md#y) [`code`](z.md) `[b](not-a-link)` [c](https://example.com)\n```\n[d](e)\n```',
    );
    expect(found.map((l) => l.target)).toEqual(['docs/x.md#y', 'z.md']);
  });
});

/** The top-level folders of the repository (what a quoted path may start with). */
const TOP = new Set(
  readdirSync(ROOT).filter(
    (f) =>
      !f.startsWith('.') && f !== 'node_modules' && f !== 'dist' && statSync(join(ROOT, f)).isDirectory(),
  ),
);

/** Repository paths quoted as code in a page's prose (`operator/start.ts`, `operator/scope/`), with their line. */
export function quotedPaths(text: string): { line: number; path: string }[] {
  const out: { line: number; path: string }[] = [];
  prose(text).forEach((line, i) => {
    for (const m of line.matchAll(/`([^`\s]+)`/g)) {
      const path = m[1].replace(/[:,]$/, '');
      const first = path.split('/')[0];
      // KubeMod's Go sources are named as KubeMod has them; `...` elides.
      if (!path.includes('/') || !TOP.has(first) || /[*{}<>$]|\.\.\.|\.go$/.test(path)) continue;
      out.push({ line: i + 1, path });
    }
  });
  return out;
}

describe('paths quoted in README.md and docs/', () => {
  it.each(PAGES)('%s quotes only paths that exist', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const missing = quotedPaths(text).filter(({ path }) => !existsSync(join(ROOT, path.split('#')[0])));
    expect(missing.map(({ line, path }) => `${page}:${line}: ${path}`)).toEqual([]);
  });

  it('finds quoted repository paths and nothing else', () => {
    expect(
      quotedPaths('see `operator/start.ts`, `operator/scope/` and `/api/v1`, `kubectl apply`, `a/b`').map(
        (p) => p.path,
      ),
    ).toEqual(['operator/start.ts', 'operator/scope/']);
  });
});

describe('docs/architecture.md', () => {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  /** Every folder holding TypeScript sources, and the operator's subfolders: where a reader looks for behaviour. */
  const sourceFolders = (): string[] => {
    const out = new Set<string>();
    const walk = (dir: string): void => {
      for (const name of readdirSync(join(ROOT, dir))) {
        const rel = dir ? `${dir}/${name}` : name;
        if (name.startsWith('.') || ['node_modules', 'dist', 'coverage'].includes(name)) continue;
        if (statSync(join(ROOT, rel)).isDirectory()) walk(rel);
        else if (rel.endsWith('.ts') && dir && dir.split('/').length <= 2) out.add(`${dir}/`);
      }
    };
    walk('');
    return [...out].sort();
  };

  it('names every folder that holds sources', () => {
    expect(sourceFolders().filter((folder) => !text.includes(`\`${folder}\``))).toEqual([]);
  });
});
