import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/*
 * The tree is the architecture (docs/architecture.md): every source folder has a layer, a module imports only from
 * its own folder or from lower layers, and no chain of imports comes back to where it started.
 */

/** Source folders from the bottom up; folders on one row are siblings and do not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ['util'],
  ['jsonpath', 'template', 'patch', 'bundle', 'fixtures', 'kube'],
  ['rule'],
  ['store', 'native'],
  ['engine', 'scope'],
  ['webhook', 'audit', 'conflict', 'gitops'],
  ['operator'],
  ['cli', 'image'],
  ['bench', 'test'],
];

/**
 * Inside a layered folder, its subfolders from the bottom up, by the same rule ('' is the folder's own files: the
 * composition root). The operator: one shape of controller at the bottom, the status writer that every controller
 * reports through, the controllers that feed the store and watch what rules read, then native policies, the dragnet
 * scope (which counts native rules), and the admission of ModRules (which asks the scope) on top.
 */
const SUBLAYERS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  operator: [
    ['controller'],
    ['status'],
    ['rules', 'certs', 'references', 'audit'],
    ['native'],
    ['scope'],
    ['admission'],
    ['', 'testing'],
  ],
};

const ROOT = join(__dirname, '..');
const SKIP = new Set(['node_modules', 'dist', 'coverage', '.git']);

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(relative(ROOT, path));
  }
  return out;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'|\brequire\('(\.{1,2}\/[^']+)'\)/g;

/** The repository files a module imports (relative imports only), resolved to paths like `engine/admit.ts`. */
export function importsOf(file: string, source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const target = normalize(join(dirname(file), m[1] ?? m[2]));
    for (const candidate of [`${target}.ts`, join(target, 'index.ts'), target]) {
      if (candidate.endsWith('.ts') && exists(candidate)) {
        out.push(candidate);
        break;
      }
    }
  }
  return out;
}

function exists(file: string): boolean {
  try {
    return statSync(join(ROOT, file)).isFile();
  } catch {
    return false;
  }
}

const topFolder = (file: string): string => file.split('/')[0];

/** The subfolder of a layered folder a file is in ('' for the folder's own files), or null. */
function subFolder(file: string): string | null {
  const parts = file.split('/');
  if (!SUBLAYERS[parts[0]]) return null;
  return parts.length > 2 ? parts[1] : '';
}

/** Imports that go up or sideways between the subfolders of a layered folder. */
export function wrongSubImports(
  graph: ReadonlyMap<string, readonly string[]>,
  layers: Readonly<Record<string, readonly (readonly string[])[]>>,
): string[] {
  const wrong: string[] = [];
  for (const [file, deps] of graph) {
    const top = topFolder(file);
    const rows = layers[top];
    if (!rows || file.endsWith('.test.ts')) continue;
    const rank = new Map(rows.flatMap((row, i) => row.map((sub) => [sub, i] as const)));
    const from = file.split('/').length > 2 ? file.split('/')[1] : '';
    for (const dep of deps) {
      if (topFolder(dep) !== top) continue;
      const to = dep.split('/').length > 2 ? dep.split('/')[1] : '';
      if (to !== from && (rank.get(to) ?? Infinity) >= (rank.get(from) ?? -1))
        wrong.push(`${file} -> ${dep}`);
    }
  }
  return wrong;
}

/** Cycles in a module graph (each as the list of its files), found with Tarjan's algorithm. */
export function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe('the layers of the tree', () => {
  const files = sourceFiles(ROOT).filter((f) => f.includes('/'));
  const graph = new Map(files.map((f) => [f, importsOf(f, readFileSync(join(ROOT, f), 'utf8'))]));
  const rank = new Map(LAYERS.flatMap((row, i) => row.map((folder) => [folder, i] as const)));

  it('gives every source folder a layer', () => {
    const folders = [...new Set(files.map(topFolder))].sort();
    expect(folders.filter((f) => !rank.has(f))).toEqual([]);
  });

  // Test files are leaves (nothing imports them): they may drive a lower module through a higher one.
  it('never imports from a higher layer or a sibling folder', () => {
    const wrong: string[] = [];
    for (const [file, deps] of graph) {
      if (file.endsWith('.test.ts')) continue;
      const from = topFolder(file);
      for (const dep of deps) {
        const to = topFolder(dep);
        if (to !== from && rank.get(to)! >= rank.get(from)!) wrong.push(`${file} -> ${dep}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('gives every subfolder of a layered folder a row', () => {
    const missing = files
      .map((f) => [topFolder(f), subFolder(f)] as const)
      .filter(([top, sub]) => sub !== null && !SUBLAYERS[top].some((row) => row.includes(sub)))
      .map(([top, sub]) => `${top}/${sub}`);
    expect([...new Set(missing)]).toEqual([]);
  });

  it('never imports from a higher or sibling subfolder inside a layered folder', () => {
    expect(wrongSubImports(graph, SUBLAYERS)).toEqual([]);
  });

  it('has no import circle', () => {
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('finds a circle and an upward import when there is one (the check can fail)', () => {
    expect(
      cyclesOf(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', ['a.ts']],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    expect(
      wrongSubImports(
        new Map([
          ['operator/status/a.ts', ['operator/scope/b.ts']],
          ['operator/scope/b.ts', ['operator/status/a.ts', 'operator/start.ts']],
        ]),
        { operator: [['status'], ['scope'], ['']] },
      ),
    ).toEqual(['operator/status/a.ts -> operator/scope/b.ts', 'operator/scope/b.ts -> operator/start.ts']);
    expect(importsOf('store/x.ts', "import { SelectCache } from '../jsonpath/select-cache';")).toEqual([
      'jsonpath/select-cache.ts',
    ]);
  });
});
