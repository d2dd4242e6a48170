import { builtinModules } from 'node:module';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

// Which files of this repository the image needs: the compiled modules `modrule` can load (followed from its entry
// point, so bench/, test helpers and build tools stay out), and the production packages of package-lock.json.

/** An input of the image that is missing or unusable. */
export class InputError extends Error {}

const REQUIRE = /\brequire\((['"])([^'"]+)\1\)/g;
const BUILTINS = new Set(builtinModules);

function resolveRelative(from: string, spec: string): string | undefined {
  const target = normalize(join(dirname(from), spec));
  return [target, `${target}.js`, join(target, 'index.js')].find(
    (f) => existsSync(f) && statSync(f).isFile(),
  );
}

/** The package a bare specifier names: `yaml`, `@kubernetes/client-node` (from `@kubernetes/client-node/dist/x`). */
export function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The compiled files reachable from `entry` (paths relative to `root`), and the packages they require. */
export function moduleClosure(root: string, entry: string): { files: string[]; packages: string[] } {
  const start = join(root, entry);
  if (!existsSync(start))
    throw new InputError(
      `${start} is missing: compile the TypeScript first (npm run build; make image does it)`,
    );
  const files = new Set<string>([start]);
  const packages = new Set<string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.pop()!;
    for (const m of readFileSync(file, 'utf8').matchAll(REQUIRE)) {
      const spec = m[2];
      if (spec.startsWith('.')) {
        const target = resolveRelative(file, spec);
        if (!target)
          throw new InputError(`${relative(root, file)} requires ${spec}, which is not in ${root}`);
        if (!files.has(target)) {
          files.add(target);
          queue.push(target);
        }
      } else if (!spec.startsWith('node:') && !BUILTINS.has(spec)) packages.add(packageName(spec));
    }
  }
  return { files: [...files].map((f) => relative(root, f)).sort(), packages: [...packages].sort() };
}

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** One production package to copy: its folder (e.g. node_modules/yaml) and version. */
export interface LockedPackage {
  path: string;
  name: string;
  version: string;
}

/**
 * Install-time dependencies of re2 (it builds or downloads its addon with them): not needed once
 * build/Release/re2.node exists, and node-gyp alone would bring a hundred packages.
 */
export const INSTALL_ONLY: Readonly<Record<string, readonly string[]>> = {
  'node_modules/re2': ['install-artifact-from-github', 'nan', 'node-gyp'],
};

/** The production packages of `root`'s package-lock.json (v2/v3): the root's dependencies, transitively. */
export function productionPackages(root: string): LockedPackage[] {
  const lockFile = join(root, 'package-lock.json');
  if (!existsSync(lockFile)) throw new InputError(`${lockFile} is missing`);
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { packages?: Record<string, LockEntry> };
  const all = lock.packages;
  if (!all) throw new InputError(`${lockFile} has no "packages" (lockfileVersion 2 or 3 is needed)`);
  // Node's resolution: the nearest node_modules/<name> up from the requiring package.
  const resolve = (name: string, from: string): string | undefined => {
    let dir = from;
    for (;;) {
      const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (all[candidate]) return candidate;
      if (!dir) return undefined;
      const at = dir.lastIndexOf('/node_modules/');
      dir = at < 0 ? '' : dir.slice(0, at);
    }
  };
  const found = new Map<string, LockedPackage>();
  const queue = [''];
  while (queue.length > 0) {
    const from = queue.pop()!;
    const entry = all[from] ?? {};
    const skip = INSTALL_ONLY[from] ?? [];
    const deps = { ...entry.optionalDependencies, ...entry.dependencies };
    for (const name of Object.keys(deps)) {
      if (skip.includes(name)) continue;
      const path = resolve(name, from);
      if (!path) {
        if (entry.optionalDependencies?.[name] !== undefined) continue; // not for this platform
        throw new InputError(
          `package-lock.json: ${from || 'the root'} depends on ${name}, which it does not list`,
        );
      }
      if (found.has(path)) continue;
      if (all[path].optional && !existsSync(join(root, path))) continue; // an optional one npm did not install
      if (!existsSync(join(root, path, 'package.json')))
        throw new InputError(`${join(root, path)} is missing: install the dependencies first (npm ci)`);
      found.set(path, { path, name, version: all[path].version ?? '' });
      queue.push(path);
    }
  }
  return [...found.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}
