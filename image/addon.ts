import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { Arch } from './arch';
import { InputError } from './closure';
import { NODE, SourceError, UnpackedNode } from './sources';

// The re2 addon for the Node the image runs. node_modules holds one built for the Node that installed it; when that
// is another ABI (this machine's Node 20 building the image's Node 24), it is built again from node_modules/re2's
// sources with the image's Node, node-gyp from node_modules (re2's own build dependency) and the headers the npm
// package of Node carries (include/node): nothing is downloaded. Built once per re2, nan and Node release (a few
// minutes on two cores) and kept in the cache folder.

/** The addon as npm installed it, relative to the repository. */
export const RE2_ADDON = 'node_modules/re2/build/Release/re2.node';

/** What of re2's package runs: its JavaScript and the addon (the image ships these, and nothing else of it). */
export const RE2_RUNTIME: readonly string[] = ['package.json', 're2.js', 'LICENSE', 'build/Release/re2.node'];

/** How re2 is built and tried: the repository, the image's Node, where to keep builds, scratch space. */
export interface Re2BuildOptions {
  root: string;
  node: UnpackedNode;
  arch: Arch;
  cacheDir: string;
  workDir: string;
  /** Progress (a build takes minutes). */
  log?: (line: string) => void;
}

function locked(root: string, path: string): string {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages?: Record<string, { version?: string; integrity?: string }>;
  };
  const entry = lock.packages?.[path];
  if (!entry?.version)
    throw new InputError(`package-lock.json has no ${path}: install the dependencies (npm ci)`);
  return `${entry.version}:${entry.integrity ?? ''}`;
}

/** The cache file of an addon built from this lock's re2 and nan for the image's Node and `arch`. */
export function re2CacheFile(root: string, arch: Arch, cacheDir: string): string {
  const sources = createHash('sha256')
    .update(`${locked(root, 'node_modules/re2')}\n${locked(root, 'node_modules/nan')}`)
    .digest('hex')
    .slice(0, 12);
  const version = locked(root, 'node_modules/re2').split(':')[0];
  return join(cacheDir, `re2-${version}-${sources}-node-${NODE.version}-${arch.node}.node`);
}

/**
 * The environment node-gyp builds in: npm's settings left out (node-gyp takes every npm_config_* variable over its
 * own arguments, and npm run or npx on Debian's Node sets npm_config_nodedir=/usr: the addon was built against this
 * machine's Node 20 headers instead of the image's), and NODE_PATH to node_modules (binding.gyp asks Node for nan's
 * include folder).
 */
export function gypEnv(env: NodeJS.ProcessEnv, root: string): NodeJS.ProcessEnv {
  const kept = Object.entries(env).filter(([name]) => !/^npm_config_/i.test(name));
  return { ...Object.fromEntries(kept), NODE_PATH: join(root, 'node_modules') };
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): void {
  try {
    execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    const out = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    throw new SourceError(`${command} ${args.join(' ')} failed (in ${cwd}):\n${out || e.message}`);
  }
}

// re2's runtime files with `addon` as its build, in dir/node_modules/re2; returns that package folder.
function re2Package(root: string, addon: string, dir: string): string {
  const pkg = join(dir, 'node_modules', 're2');
  for (const file of RE2_RUNTIME.slice(0, -1)) cpSync(join(root, 'node_modules/re2', file), join(pkg, file));
  mkdirSync(join(pkg, 'build/Release'), { recursive: true });
  copyFileSync(addon, join(pkg, 'build/Release/re2.node'));
  return pkg;
}

/** Loads `addon` as re2 under the image's Node and runs one pattern; throws SourceError when it cannot. */
export function tryRe2(options: Re2BuildOptions, addon: string): void {
  const dir = mkdtempSync(join(options.workDir, 're2-try-'));
  try {
    const pkg = re2Package(options.root, addon, dir);
    const probe = `const RE2 = require(${JSON.stringify(pkg)}); if (new RE2('^a+$').test('aaa') !== true) process.exit(3);`;
    run(options.node.node, ['-e', probe], dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function build(options: Re2BuildOptions, target: string): void {
  const { root, node } = options;
  const dir = mkdtempSync(join(options.workDir, 're2-build-'));
  try {
    const src = join(dir, 're2');
    cpSync(join(root, 'node_modules/re2'), src, {
      recursive: true,
      filter: (f) => !relative(join(root, 'node_modules/re2'), f).startsWith('build'),
    });
    const gyp = join(root, 'node_modules/node-gyp/bin/node-gyp.js');
    if (!existsSync(gyp)) throw new InputError(`${gyp} is missing: install the dependencies first (npm ci)`);
    run(node.node, [gyp, 'rebuild', '-j', 'max', `--nodedir=${node.dir}`], src, gypEnv(process.env, root));
    const built = join(src, 'build/Release/re2.node');
    tryRe2(options, built);
    mkdirSync(options.cacheDir, { recursive: true });
    copyFileSync(built, `${target}.partial`);
    renameSync(`${target}.partial`, target);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The re2 addon the image's Node loads: node_modules' own when the Node that installed it has the image's ABI, else
 * one built for the image's Node (cached; tried before use either way).
 */
export function re2AddonFor(options: Re2BuildOptions): string {
  const { root, arch } = options;
  if (process.versions.modules === NODE.abi) return join(root, RE2_ADDON);
  if (arch.node !== process.arch)
    throw new InputError(
      `node_modules was installed by Node ${process.versions.node} (ABI ${process.versions.modules}) and the image ` +
        `runs Node ${NODE.version} (ABI ${NODE.abi}) on ${arch.oci}: re2 can be built for it only on an ` +
        `${arch.oci} machine (or install node_modules with Node ${NODE.version.split('.')[0]})`,
    );
  const cached = re2CacheFile(root, arch, options.cacheDir);
  if (existsSync(cached)) {
    try {
      tryRe2(options, cached);
      return cached;
    } catch {
      rmSync(cached, { force: true });
    }
  }
  options.log?.(
    `building re2 for Node ${NODE.version} (ABI ${NODE.abi}; node_modules has ABI ${process.versions.modules}), ` +
      `once: a few minutes; kept in ${cached}`,
  );
  build(options, cached);
  return cached;
}
